package e2e

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNoIstioCRDs: against a cluster without Istio's CRDs (the suite's apiserver before
// `kube-env.sh crds`, probed in TestMain) the plugin fails with one clear message.
func TestNoIstioCRDs(t *testing.T) {
	r := env.noCRD
	if r.err != nil || r.timedOut {
		t.Fatalf("%v\n(error: %v, timed out: %v)", r, r.err, r.timedOut)
	}
	if r.code == 0 {
		t.Errorf("want a non-zero exit without Istio's CRDs, got 0 with:\n%s", r.stdout)
	}
	lines := nonEmptyLines(r.stderr)
	if len(lines) != 1 {
		t.Errorf("want one message on stderr, got %d lines:\n%s", len(lines), r.stderr)
	}
	if !regexp.MustCompile(`(?i)istio`).MatchString(r.stderr) || !regexp.MustCompile(`(?i)\bCRDs?\b|custom ?resource`).MatchString(r.stderr) {
		t.Errorf("want the message to say Istio's CRDs are missing, got:\n%s", r.stderr)
	}
}

// TestUnreachableServer: a refused connection and a server that never answers both give
// kubectl's own message, and the second one within --request-timeout.
func TestUnreachableServer(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there any more
		kc := writeKubeconfig(t, "refused", "https://"+addr, "some-token")
		checkLikeKubectl(t, kc, 5*time.Second)
	})
	t.Run("silent", func(t *testing.T) {
		// A server that accepts connections and never says a word: only --request-timeout
		// ends the wait (client-go's TLS handshake timeout alone would take 10s).
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			l.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
		kc := writeKubeconfig(t, "silent", "https://"+l.Addr().String(), "some-token")
		checkLikeKubectl(t, kc, 2*time.Second)
	})
}

// TestBadCredentials: a token the apiserver does not know gives kubectl's "You must be logged
// in" message; a known user without any permission gets a forbidden error.
func TestBadCredentials(t *testing.T) {
	t.Run("bad-token", func(t *testing.T) {
		data, err := os.ReadFile(kubeconfig("admin"))
		if err != nil {
			t.Fatal(err)
		}
		server := regexp.MustCompile(`server: (\S+)`).FindSubmatch(data)
		if server == nil {
			t.Fatal("admin kubeconfig has no server")
		}
		kc := writeKubeconfig(t, "bad-token", string(server[1]), "not-a-token")
		checkLikeKubectl(t, kc, 10*time.Second)
	})
	t.Run("no-permission", func(t *testing.T) {
		r := runPlugin(kubeconfig("nobody"), "cluster", "kubernetes", "-n", "default", "-o", "envoy")
		if r.code == 0 {
			t.Fatalf("a user without any permission got an answer:\n%s", r.stdout)
		}
		if !strings.Contains(strings.ToLower(r.stderr), "forbidden") || !strings.Contains(r.stderr, "nobody") {
			t.Errorf("want a forbidden error naming the user, got:\n%s", r.stderr)
		}
	})
}

// checkLikeKubectl runs `kubectl get services` and the plugin against kubeconfig kc with the
// same --request-timeout. Both must fail, the plugin within the timeout (plus start-up slack),
// and the plugin's message must carry kubectl's: the last line kubectl prints, up to its first
// colon or parenthesis (the rest is error detail that differs between client versions), in
// any letter case.
func checkLikeKubectl(t *testing.T, kc string, timeout time.Duration) {
	t.Helper()
	rt := "--request-timeout=" + timeout.String()
	k := runKubectl(timeout+30*time.Second, kc, "get", "services", "-n", "default", rt)
	if k.code == 0 {
		t.Fatalf("kubectl succeeded against %s", kc)
	}
	lines := nonEmptyLines(k.stderr)
	if len(lines) == 0 {
		t.Fatalf("kubectl printed nothing: %v", k)
	}
	want := strings.TrimPrefix(lines[len(lines)-1], "error: ")
	if i := strings.IndexAny(want, ":("); i > 0 {
		want = strings.TrimSpace(want[:i])
	}

	r := runPluginTimeout(timeout+30*time.Second, kc, "cluster", "kubernetes", "-n", "default", "-o", "envoy", rt)
	if r.code == 0 {
		t.Fatalf("the plugin succeeded against %s:\n%s", kc, r.stdout)
	}
	// Compared case-insensitively: the plugin starts its messages lower-case, as Go error
	// strings are; kubectl capitalises some.
	if !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(want)) {
		t.Errorf("want kubectl's message %q, got:\n%s", want, r.stderr)
	}
	if limit := timeout + 5*time.Second; r.elapsed > limit {
		t.Errorf("the plugin took %v with %s (limit %v)", r.elapsed.Round(time.Millisecond), rt, limit)
	}
	if n := len(nonEmptyLines(r.stderr)); n > 3 {
		t.Errorf("want one message, got %d lines on stderr:\n%s", n, r.stderr)
	}
}

// writeKubeconfig writes a kubeconfig for server with a bearer token.
func writeKubeconfig(t *testing.T, name, server, token string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), name+".kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: ` + server + `
    insecure-skip-tls-verify: true
users:
- name: e2e
  user:
    token: ` + token + `
contexts:
- name: e2e
  context:
    cluster: e2e
    user: e2e
current-context: e2e
`
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}
