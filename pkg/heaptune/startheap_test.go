package heaptune

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// startHeapChild, set in the environment, makes TestAdjustStartingHeap's process the child
// that runs one case in a collector state of its own.
const startHeapChild = "MESH_EXPLAIN_STARTHEAP_CHILD"

// keep holds what the child allocates, so that it stays live.
var keep [][]byte

// allocate keeps n bytes more in 4 KiB pieces.
func allocate(n int) {
	for range n / 4096 {
		keep = append(keep, make([]byte, 4096))
	}
}

func gogc() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

// TestAdjustStartingHeap runs each case in a child process (the collector's settings are the
// process's): with a starting heap of 32 MiB, the heap goal after a collection of a small heap
// is about 32 MiB (24 to 48: the goal counts stacks and globals too), and so is the goal
// before the first collection, where the default goal is twice the live heap, and once the
// live heap passes half of it GOGC is what it was; GOGC=off, or an environment GOGC as
// generous, is left alone.
func TestAdjustStartingHeap(t *testing.T) {
	if c := os.Getenv(startHeapChild); c != "" {
		startHeapCase(c)
		return
	}
	for _, tc := range []struct{ name, mode, env, want string }{
		{"default", "adjust", "", "goal about 32 MiB; GOGC 100 once 40 MiB more are live"},
		{"without adjusting", "none", "", "goal under 24 MiB"},
		{"GOGC from the environment", "adjust", "GOGC=50", "goal about 32 MiB; GOGC 50 once 40 MiB more are live"},
		{"GOGC off", "adjust", "GOGC=off", "GOGC -1 left alone"},
		{"GOGC already generous", "adjust", "GOGC=2000", "GOGC 2000 left alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestAdjustStartingHeap$")
			cmd.Env = append(os.Environ(), startHeapChild+"="+tc.mode)
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "startheap: "+tc.want+"\n") {
				t.Errorf("child said:\n%s\nwant %q", out, tc.want)
			}
		})
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// settle collects, then waits up to a second for cond, which a finalizer run after the
// collection makes true; it reports whether it became true.
func settle(cond func() bool) bool {
	runtime.GC()
	for range 100 {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// startHeapCase is the child's side: it prints what it saw.
func startHeapCase(mode string) {
	const mib = 1 << 20
	before := gogc()
	if mode == "none" {
		runtime.GC()
		if g := heapGoal(); g < 24*mib {
			fmt.Printf("startheap: goal under 24 MiB\n")
		} else {
			fmt.Printf("startheap: goal %d MiB\n", g/mib)
		}
		return
	}
	// As in the command, whose packages' initialization leaves about 3 MiB live and collects:
	// the goal is then twice the live heap, not the runtime's minimum.
	allocate(3 * mib)
	runtime.GC()
	AdjustStartingHeap(32 * mib)
	if g := gogc(); g == before {
		fmt.Printf("startheap: GOGC %d left alone\n", g)
		return
	}
	// The first goal is the starting heap already, not only the goals after collections.
	if g := heapGoal(); g < 24*mib || g > 48*mib {
		fmt.Printf("startheap: goal %d MiB before a collection\n", g/mib)
		return
	}
	if !settle(func() bool { g := heapGoal(); return 24*mib <= g && g <= 48*mib }) {
		fmt.Printf("startheap: goal %d MiB after a collection\n", heapGoal()/mib)
		return
	}
	allocate(40 * mib)
	if !settle(func() bool { return gogc() == before }) {
		fmt.Printf("startheap: GOGC %d, not %d, once 40 MiB more are live\n", gogc(), before)
		return
	}
	fmt.Printf("startheap: goal about 32 MiB; GOGC %d once 40 MiB more are live\n", gogc())
}
