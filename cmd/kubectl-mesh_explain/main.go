// Command kubectl-mesh_explain is the kubectl plugin `kubectl mesh-explain`.
package main

import (
	"os"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/cli"
	// Its init also puts the start of the heap on transparent huge pages, where Linux gives
	// them on request.
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/heaptune"
)

// startHeap is the heap a command grows to before the collector runs at its usual pace: the
// objects a command reads are mostly kept, so collecting while the heap is smaller finds little.
// The largest live answer of the bench mesh (a waypoint's, about 33 MiB of heap at 10,000
// Services) fits under it and never collects (docs/performance.md).
const startHeap = 64 << 20

func main() {
	heaptune.AdjustStartingHeap(startHeap)
	os.Exit(cli.Main(os.Args[1:], cli.StdStreams()))
}
