package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// UsageError is a wrong command line: Main prints it with the command's usage and exits 64.
type UsageError struct {
	// Cmd is the command whose usage is printed (nil: the command that ran).
	Cmd *cobra.Command
	Err error
}

// Error returns the message without the usage (Main prints that).
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// usageErrorf returns a UsageError for cmd.
func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &UsageError{Cmd: cmd, Err: fmt.Errorf(format, args...)}
}

// DataError is malformed input (a file that does not parse, an invalid MeshConfig): Main
// prints it and exits 65.
type DataError struct{ Err error }

// Error returns the message.
func (e *DataError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *DataError) Unwrap() error { return e.Err }
