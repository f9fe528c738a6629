// gocgo - gohot's known answer in a cgo binary: its C part (a loop in
// C, called through cgo) has .eh_frame, its Go code none, so one file
// needs both kinds of unwind rules. heavy and light run the same Go loop
// 10:1; viaC runs a C loop. At the end it prints heavy's and light's
// shares of their sum ("heavy=H light=L", percent of the thread's CPU).
//
// usage: gocgo SECONDS
package main

/*
static unsigned long cwork(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x = x * 31 + i;
	return x;
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
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

//go:noinline
func viaC() { sink += uint64(C.cwork(200000)) }

func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func main() {
	secs, _ := strconv.ParseFloat(os.Args[1], 64)
	runtime.LockOSThread()
	var h, l int64
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		t0 := threadCPU()
		heavy()
		t1 := threadCPU()
		light()
		t2 := threadCPU()
		viaC()
		h += t1 - t0
		l += t2 - t1
	}
	fmt.Printf("heavy=%.2f light=%.2f\n", 100*float64(h)/float64(h+l), 100*float64(l)/float64(h+l))
}
