// Command kubectl-mesh_explain is the kubectl plugin `kubectl mesh-explain`.
package main

import (
	"os"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], cli.StdStreams())) }
