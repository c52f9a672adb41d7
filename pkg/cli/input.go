package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/plan"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// LoadFunc is source.Load; tests replace it to see the planned reads.
type LoadFunc = plan.Loader

// sourceSpec returns the source.Spec of the shared flags, without Reads. In files-only mode
// it carries no Getter, so nothing can reach a cluster or read a kubeconfig. File objects are
// filtered by the Reads the command plans (FilterFiles), in files-only and overlay mode alike,
// so that the same command line gives the same answer from files as from a cluster. Every load
// of the command shares one file cache: the files are read and parsed once, however many times
// the plan is corrected, and the Nodes read from the same files.
func (o *CommonOptions) sourceSpec(namespace string) source.Spec {
	s := source.Spec{
		Files:            o.Filenames,
		Recursive:        o.Recursive,
		Stdin:            o.In,
		Overlay:          o.Overlay,
		IstioNamespace:   o.IstioNamespace,
		Revision:         o.Revision,
		MeshConfigFile:   o.MeshConfigFile,
		DefaultNamespace: namespace,
		FilterFiles:      true,
	}
	s.MaxInputBytes, _ = o.maxInputBytes() // checked by Validate
	if len(o.Filenames) > 0 {
		s.Cache = source.NewFileCache()
	}
	if !o.FilesOnly() {
		s.Getter = o.ConfigFlags
	}
	return s
}

// loader is load with standard input read once and handed to every load afresh: a plan
// corrected after a load loads the files again.
func (o *CommonOptions) loader(load LoadFunc) plan.Loader {
	return func(ctx context.Context, spec source.Spec) (*model.Snapshot, error) {
		if spec.Stdin != nil && slices.Contains(spec.Files, "-") {
			if o.stdin == nil {
				data, err := source.ReadStdin(spec.Stdin, spec.MaxInputBytes)
				o.stdin = &stdinCopy{data: data, err: err}
			}
			if o.stdin.err != nil {
				return nil, o.stdin.err
			}
			spec.Stdin = o.stdin.reader()
		}
		if live := spec.Getter != nil && (len(spec.Files) == 0 || spec.Overlay); live && o.progressTo(o.ErrOut) {
			p := startProgress(o.ErrOut, progressDelay, 250*time.Millisecond)
			defer p.end()
			spec.Progress = p.update
		}
		return load(ctx, spec)
	}
}

// stdinCopy is standard input as read the first time.
type stdinCopy struct {
	data []byte
	err  error
}

// reader returns a reader over all of standard input, or one that fails as reading it failed.
func (s *stdinCopy) reader() io.Reader {
	if s.err != nil {
		return errReader{s.err}
	}
	return bytes.NewReader(s.data)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// meshRootNamespace checks --meshconfig before anything is read (an invalid file is a data
// error) and returns the root namespace it sets, or "" when it sets none or there is no file.
func (o *CommonOptions) meshRootNamespace() (string, error) {
	if o.MeshConfigFile == "" {
		return "", nil
	}
	limit, _ := o.maxInputBytes()
	data, err := source.ReadInput(o.MeshConfigFile, limit)
	if err != nil {
		return "", fmt.Errorf("reading the mesh config file: %w", err)
	}
	mc, user, err := source.ParseMeshConfig(string(data))
	if err != nil {
		return "", &DataError{Err: fmt.Errorf("invalid mesh config %s: %w", o.MeshConfigFile, err)}
	}
	if user["rootNamespace"] {
		return mc.GetRootNamespace(), nil
	}
	return "", nil
}

// reportIssues prints the snapshot's load issues to w as `warning: ...` lines.
func reportIssues(w io.Writer, snap *model.Snapshot) []string {
	if snap == nil {
		return nil
	}
	var printed []string
	for _, is := range snap.Issues {
		line := is.String()
		printed = append(printed, is.Message)
		fmt.Fprintf(w, "warning: %s\n", render.Safe(line))
	}
	return printed
}

// reportWarnings prints result warnings to w, except those already printed as load issues.
func reportWarnings(w io.Writer, warnings, printed []string) {
	for _, msg := range warnings {
		dup := false
		for _, p := range printed {
			if p != "" && strings.Contains(msg, p) {
				dup = true
				break
			}
		}
		if !dup {
			fmt.Fprintf(w, "warning: %s\n", render.Safe(msg))
		}
	}
}
