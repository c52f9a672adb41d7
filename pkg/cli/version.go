package cli

import "runtime/debug"

// Version is the release version, set at build time:
// -ldflags "-X github.com/mesh-explain/kubectl-mesh-explain/pkg/cli.Version=v0.1.0".
// Empty means a development build (see buildVersion).
var Version = ""

// buildVersion returns the version of this build: Version when the linker set it, else the
// module version `go install` recorded, else "dev".
func buildVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
