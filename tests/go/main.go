// profgen writes a CPU profile and a heap profile with runtime/pprof, for
// the proffs format tests. Standard library only.
//
// The CPU profile is made non-trivial on purpose: several goroutines burn
// in distinct, non-inlined functions with different amounts of work, so the
// profile has several stacks and functions of clearly different weight.
//
//	profgen -cpu cpu.pb.gz -heap heap.pb.gz [-dur 1.5s] [-allocs F]
//	        [-goroutine F] [-mutex F] [-block F]
//
// The optional profiles come from runtime/pprof's named profiles, with
// some lock contention staged for mutex and block.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var sink uint64

//go:noinline
func burnHash(deadline time.Time) uint64 {
	h := uint64(14695981039346656037)
	for time.Now().Before(deadline) {
		for i := 0; i < 20000; i++ {
			h ^= uint64(i)
			h *= 1099511628211
		}
	}
	return h
}

//go:noinline
func burnSqrt(deadline time.Time) uint64 {
	x := 1.0
	for time.Now().Before(deadline) {
		for i := 0; i < 20000; i++ {
			x = x*1.0000001 + 0.5/x
		}
	}
	return uint64(x)
}

//go:noinline
func recurse(n int, deadline time.Time) uint64 {
	if n == 0 {
		return burnHash(deadline)
	}
	return recurse(n-1, deadline) + 1
}

//go:noinline
func burnDeep(deadline time.Time) uint64 {
	return recurse(5, deadline)
}

//go:noinline
func allocLots(n int) [][]byte {
	var keep [][]byte
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 4096+i%1024))
	}
	return keep
}

//go:noinline
func allocSmall(n int) []*[64]byte {
	var keep []*[64]byte
	for i := 0; i < n; i++ {
		keep = append(keep, new([64]byte))
	}
	return keep
}

// contend makes goroutines fight over one mutex so the mutex and block
// profiles have samples.
//
//go:noinline
func contend() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				mu.Lock()
				time.Sleep(20 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// check exits with err on stderr, if there is one.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	cpu := flag.String("cpu", "", "write the CPU profile here")
	heap := flag.String("heap", "", "write the heap profile here")
	dur := flag.Duration("dur", 1500*time.Millisecond, "how long to burn")
	named := map[string]*string{
		"allocs":    flag.String("allocs", "", "write the allocs profile here"),
		"goroutine": flag.String("goroutine", "", "write the goroutine profile here"),
		"mutex":     flag.String("mutex", "", "write the mutex profile here"),
		"block":     flag.String("block", "", "write the block profile here"),
	}
	flag.Parse()
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	if *cpu == "" || *heap == "" {
		fmt.Fprintln(os.Stderr, "usage: profgen -cpu FILE -heap FILE [-dur D]")
		os.Exit(2)
	}
	runtime.MemProfileRate = 512

	f, err := os.Create(*cpu)
	check(err)
	check(pprof.StartCPUProfile(f))
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	var mu sync.Mutex
	work := []func(time.Time) uint64{burnHash, burnSqrt, burnDeep, burnHash}
	for _, w := range work {
		wg.Add(1)
		go func(w func(time.Time) uint64) {
			defer wg.Done()
			v := w(deadline)
			mu.Lock()
			sink += v
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	pprof.StopCPUProfile()
	f.Close()

	big := allocLots(2000)
	small := allocSmall(20000)
	runtime.GC()
	h, err := os.Create(*heap)
	check(err)
	check(pprof.WriteHeapProfile(h))
	h.Close()
	contend()
	for _, name := range []string{"allocs", "goroutine", "mutex", "block"} {
		if *named[name] == "" {
			continue
		}
		f, err := os.Create(*named[name])
		if err == nil {
			err = pprof.Lookup(name).WriteTo(f, 0)
			f.Close()
		}
		check(err)
	}
	runtime.KeepAlive(big)
	runtime.KeepAlive(small)
	fmt.Println(sink != 42)
}
