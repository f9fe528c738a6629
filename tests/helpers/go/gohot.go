// gohot - a known answer for Go binaries: heavy and light run the same
// loop 10:1, each call timed with the thread's CPU clock; at the end it
// prints each one's share of their sum ("heavy=H light=L", percent), to
// compare with a profile. Built stripped (-ldflags='-s -w') by the tests,
// so only Go's own function table (.gopclntab) can name its functions.
//
// With GOHOT_PROF=FILE it also writes Go's own CPU profile of the run
// (runtime/pprof, 100 Hz) to FILE: the truth a profile of it is judged
// against.
//
// usage: gohot SECONDS
//
//	gohot SECONDS goroutines N: N goroutines, each running heavy and
//	light in turn (no clock: the answer is the work's, 10 of 11)
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

var sink uint64

//go:noinline
func work(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + uint64(i)
	}
	sink = x
}

//go:noinline
func heavy() { work(10 * 200000) }

//go:noinline
func light() { work(200000) }

// threadCPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func main() {
	secs, _ := strconv.ParseFloat(os.Args[1], 64)
	if p := os.Getenv("GOHOT_PROF"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			panic(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			panic(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if len(os.Args) > 3 && os.Args[2] == "goroutines" {
		n, _ := strconv.Atoi(os.Args[3])
		crowd(secs, n)
		return
	}
	runtime.LockOSThread()
	var h, l int64
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		t0 := threadCPU()
		heavy()
		t1 := threadCPU()
		light()
		t2 := threadCPU()
		h += t1 - t0
		l += t2 - t1
	}
	fmt.Printf("heavy=%.2f light=%.2f\n", 100*float64(h)/float64(h+l), 100*float64(l)/float64(h+l))
}

// spinner runs heavy and light in turn until end: one of crowd's
// goroutines, scheduled by Go onto whichever thread is free.
//
//go:noinline
func spinner(end time.Time, wg *sync.WaitGroup) {
	defer wg.Done()
	for time.Now().Before(end) {
		heavy()
		light()
	}
}

// crowd runs n spinners for secs seconds: many goroutines on few threads,
// preempted and moved between threads by Go's scheduler.
func crowd(secs float64, n int) {
	var wg sync.WaitGroup
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for i := 0; i < n; i++ {
		wg.Add(1)
		go spinner(end, &wg)
	}
	wg.Wait()
	fmt.Printf("goroutines=%d\n", n)
}
