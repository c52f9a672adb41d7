package istiorun

import (
	"os"
	"sync"

	"istio.io/istio/pkg/log"
)

// LogLevelEnv names the environment variable that sets the level of Istio's own logs
// (debug, info, warn, error, none). The default is none: its errors about the fake cluster
// (missing CRD annotations, informer retries) are noise here, and the runners report failures
// themselves.
const LogLevelEnv = "CONFORMANCE_ISTIO_LOG"

var logOnce sync.Once

// ConfigureLogging sends Istio's logs to stderr, so that they never mix with the outputs
// written to stdout, at the level given by CONFORMANCE_ISTIO_LOG.
func ConfigureLogging() {
	logOnce.Do(func() {
		level := os.Getenv(LogLevelEnv)
		if level == "" {
			level = "none"
		}
		o := log.DefaultOptions()
		o.OutputPaths = []string{"stderr"}
		o.ErrorOutputPaths = []string{"stderr"}
		o.SetDefaultOutputLevel(log.OverrideScopeName, log.StringToLevel(level))
		if err := log.Configure(o); err != nil {
			panic(err)
		}
	})
}
