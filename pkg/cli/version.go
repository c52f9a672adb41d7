package cli

import (
	"runtime/debug"
)

// Version is the release version, set at build time:
// -ldflags "-X github.com/mesh-explain/kubectl-mesh-explain/pkg/cli.Version=v0.1.0".
// Empty means a development build (see buildVersion).
var Version = ""

// Commit is the commit the binary was built from, set at build time like Version (GoReleaser
// passes {{ .FullCommit }}). Empty: the commit Go recorded (vcs.revision), if any.
var Commit = ""

// IstioVersion is the Istio version whose behaviour the engines model: the VERSION file of
// the istio.io/istio module conformance/go.mod pins (IstioModuleVersion), whose code the
// conformance suite runs. Tests check both against that module.
const IstioVersion = "1.31"

// IstioModuleVersion is the version of istio.io/istio that conformance/go.mod pins.
const IstioModuleVersion = "v0.0.0-20260827124520-eed52ebb66ad"

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

// buildCommit returns Commit, else the vcs.revision Go recorded (with "-dirty" when the tree
// was modified), else "".
func buildCommit() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
