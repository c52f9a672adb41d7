package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

func testStreams() genericiooptions.IOStreams {
	s, _, _, _ := genericiooptions.NewTestIOStreams()
	return s
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A read longer than the delay shows how far it has got, in place, and erases the line at the
// end; a read that ends before the delay prints nothing.
func TestProgressLine(t *testing.T) {
	var slow syncBuffer
	p := startProgress(&slow, 10*time.Millisecond, 5*time.Millisecond)
	p.update(source.Progress{Done: 3, Total: 24, Objects: 1204})
	p.update(source.Progress{Done: 2, Total: 24, Objects: 900}) // a late report of an earlier read
	time.Sleep(60 * time.Millisecond)
	p.end()
	out := slow.String()
	if !strings.Contains(out, "\r\x1b[Kreading the cluster: 3 of 24 reads, 1204 objects") {
		t.Errorf("no progress line in %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") || strings.Contains(out, "\n") {
		t.Errorf("the progress line is not erased in place: %q", out)
	}

	var fast syncBuffer
	p = startProgress(&fast, time.Hour, time.Millisecond)
	p.update(source.Progress{Done: 1, Total: 2, Objects: 5})
	p.end()
	if fast.String() != "" {
		t.Errorf("a read shorter than the delay printed %q", fast.String())
	}
}

// The loader asks for progress only for a live read whose stderr is a terminal.
func TestProgressOnlyLiveOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		spec     source.Spec
		want     bool
	}{
		{"live on a terminal", true, source.Spec{Getter: NewCommonOptions(testStreams()).ConfigFlags}, true},
		{"live on a pipe", false, source.Spec{Getter: NewCommonOptions(testStreams()).ConfigFlags}, false},
		{"files on a terminal", true, source.Spec{Getter: NewCommonOptions(testStreams()).ConfigFlags, Files: []string{"x.yaml"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewCommonOptions(testStreams())
			o.progressTo = func(io.Writer) bool { return tc.terminal }
			var got bool
			_, _ = o.loader(func(_ context.Context, s source.Spec) (*model.Snapshot, error) {
				got = s.Progress != nil
				return &model.Snapshot{}, nil
			})(context.Background(), tc.spec)
			if got != tc.want {
				t.Errorf("progress asked: %v, want %v", got, tc.want)
			}
		})
	}
}
