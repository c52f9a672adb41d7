package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
)

// Exit codes (sysexits.h style, as istioctl uses them).
const (
	// ExitOK: the subject was explained; diagnostics do not change it.
	ExitOK = 0
	// ExitError: the subject was not found, the query cannot be answered, or a read failed.
	ExitError = 1
	// ExitIncomplete: the answer was printed, but something it needed could not be read (a
	// kind forbidden, failed or timed out, an object skipped as malformed); --allow-partial
	// exits 0 instead.
	ExitIncomplete = 3
	// ExitUsage: the command line is wrong (EX_USAGE).
	ExitUsage = 64
	// ExitData: the input is malformed: YAML that does not parse, an invalid MeshConfig (EX_DATAERR).
	ExitData = 65
	// ExitInternal: a bug; the command recovered from a panic (EX_SOFTWARE).
	ExitInternal = 70
	// ExitFindings: `check` found something at or above --fail-on (the code istioctl analyze
	// exits with when its analyzers find issues, istioctl/cmd/sysexits.go).
	ExitFindings = 79
)

// StdStreams returns the process's standard streams.
func StdStreams() genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Main runs `kubectl mesh-explain` with args (without the program name) and returns the exit
// code. It is the only place where errors become messages and exit codes, and it never panics.
func Main(args []string, streams genericiooptions.IOStreams) int {
	// client-go logs through klog to stderr: a read cancelled because another read already
	// failed (a bad token fails all of them) logs "Unexpected error when reading response
	// body" once per read. Every read error the plugin cares about comes back as an error and
	// is reported once, as a warning or the command's error; the log lines are noise around it.
	klog.SetLogger(logr.Discard())
	return run(args, streams, NewRootCmd)
}

// run is Main with the command tree builder given, so tests can build trees with fakes.
func run(args []string, streams genericiooptions.IOStreams, build func(genericiooptions.IOStreams) *cobra.Command) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(streams.ErrOut, "error: internal error: %s (please report this with the command line that caused it)\n", render.Safe(fmt.Sprint(r)))
			code = ExitInternal
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root := build(streams)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	return reportError(streams, cmd, err)
}

// reportError prints err the way its type asks for and returns the exit code.
func reportError(streams genericiooptions.IOStreams, cmd *cobra.Command, err error) int {
	var usage *UsageError
	var data *DataError
	var unknown *render.UnknownFormatError
	var findings *FindingsError
	var incomplete *IncompleteError
	switch {
	case errors.As(err, &incomplete):
		fmt.Fprintf(streams.ErrOut, "warning: %s\n", err)
		return ExitIncomplete
	case errors.As(err, &findings):
		fmt.Fprintf(streams.ErrOut, "%s\n", render.Safe(err.Error()))
		return ExitFindings
	case errors.As(err, &usage), errors.As(err, &unknown):
		c := cmd
		if usage != nil && usage.Cmd != nil {
			c = usage.Cmd
		}
		fmt.Fprintf(streams.ErrOut, "error: %s\n", render.Safe(err.Error()))
		if c != nil {
			fmt.Fprintf(streams.ErrOut, "\nUsage:\n  %s\n\nSee '%s --help' for examples and all flags.\n", c.UseLine(), c.CommandPath())
		}
		return ExitUsage
	case errors.As(err, &data):
		fmt.Fprintf(streams.ErrOut, "error: %s\n", render.Safe(err.Error()))
		return ExitData
	}
	msg := err.Error()
	var nf *explain.NotFoundError
	var iq *explain.InvalidQueryError
	if !errors.As(err, &nf) && !errors.As(err, &iq) && errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	fmt.Fprintf(streams.ErrOut, "error: %s\n", render.Safe(strings.TrimSuffix(msg, "\n")))
	return ExitError
}
