// scrapetarget is the ground truth of the --scrape test: a Go service with
// net/http/pprof whose allocation rates, live heap and goroutine count are
// known. Standard library only.
//
//	scrapetarget -addr 127.0.0.1:PORT [-long 10485760] [-short 1048576]
//	             [-hold 8] [-goroutines 25]
//	scrapetarget -addr 127.0.0.1:PORT -fault hang|500|garbage
//
// allocLong allocates -long bytes per second and allocShort -short, paced
// against the clock in whole pages (so the size Go records is the size
// asked for), holdHeap keeps -hold MiB live, -goroutines goroutines wait in
// holdGoroutine, and two goroutines contend on a mutex so that the mutex
// and block profiles have something. MemProfileRate is 1: every allocation
// is recorded, the profile is exact rather than sampled.
//
// With -fault it serves no profile: hang accepts and never answers, 500
// answers every request with an error, garbage answers 10 MB of bytes that
// are not a profile.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

var (
	sinkLong, sinkShort []byte
	held                [][]byte
	mu                  sync.Mutex
	shared              int
)

const chunkLong = 10 * 8192 // 80 KiB: whole pages, a large object
const chunkShort = 8192     // a size class of its own

//go:noinline
func allocLong() { sinkLong = make([]byte, chunkLong) }

//go:noinline
func allocShort() { sinkShort = make([]byte, chunkShort) }

//go:noinline
func holdHeap(mib int) {
	for i := 0; i < mib; i++ {
		held = append(held, make([]byte, 1<<20))
	}
}

//go:noinline
func holdGoroutine(ready *sync.WaitGroup, never chan struct{}) {
	ready.Done()
	<-never
}

//go:noinline
func contend() {
	for {
		mu.Lock()
		shared++
		time.Sleep(2 * time.Millisecond)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
}

// allocate paces both functions against the clock, every 5 ms.
func allocate(long, short int64) {
	start := time.Now()
	var doneLong, doneShort int64
	for {
		el := time.Since(start).Seconds()
		for doneLong < int64(el*float64(long)) {
			allocLong()
			doneLong += chunkLong
		}
		for doneShort < int64(el*float64(short)) {
			allocShort()
			doneShort += chunkShort
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fault(kind string, ln net.Listener) {
	switch kind {
	case "hang":
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // kept open, never answered
		}
	case "500":
		http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "broken on purpose", http.StatusInternalServerError)
		}))
	case "garbage":
		junk := make([]byte, 10<<20)
		rand.Read(junk)
		http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(junk)
		}))
	}
}

func main() {
	runtime.MemProfileRate = 1
	addr := flag.String("addr", "127.0.0.1:6060", "listen address")
	long := flag.Int64("long", 10<<20, "allocLong bytes per second")
	short := flag.Int64("short", 1<<20, "allocShort bytes per second")
	hold := flag.Int("hold", 8, "MiB kept live by holdHeap")
	gor := flag.Int("goroutines", 25, "goroutines parked in holdGoroutine")
	kind := flag.String("fault", "", "hang, 500 or garbage: serve no profile")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *kind != "" {
		fmt.Println("ready", ln.Addr())
		fault(*kind, ln)
		return
	}
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	holdHeap(*hold)
	var ready sync.WaitGroup
	never := make(chan struct{})
	ready.Add(*gor)
	for i := 0; i < *gor; i++ {
		go holdGoroutine(&ready, never)
	}
	ready.Wait()
	go contend()
	go contend()
	go allocate(*long, *short)
	fmt.Println("ready", ln.Addr())
	http.Serve(ln, nil)
}
