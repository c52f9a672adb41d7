// Package cli is the `kubectl mesh-explain` command line: the cobra tree, one NewCmdX and
// XOptions (Complete → Validate → Run) per command, the shared flags (kubectl's connection
// flags, -f/-R/--overlay, the Istio install flags, -o, --color), the plan of what to read from
// a cluster, help text, and the one place errors become messages and exit codes (Main).
//
// It owns: Main, StdStreams, NewRootCmd, the cluster, authz and check commands, the typed usage/data
// errors and the exit codes.
// It may import: every package of this module except internal test helpers; cobra,
// cli-runtime, client-go's auth plugins.
package cli
