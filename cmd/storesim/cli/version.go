package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped at build time, each optional; what is not stamped is read from
// the binary's build information (debug.ReadBuildInfo: the module version
// that go install module@version records, and the VCS settings that
// -buildvcs records), and what neither says is printed as unknown
// (P=github.com/storesim/storesim/cmd/storesim/cli):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse HEAD) \
//	    -X main.commitTime=$(git log -1 --format=%cI) -X main.modified=false" ./cmd/storesim
var (
	commit, commitTime, modified string
)

// buildInfo is what storesim knows about its own build.
type buildInfo struct {
	Version    string // what the run header and certificates state
	Module     string // module path and version from the build info
	Commit     string // "" when unknown
	CommitTime string
	Modified   string // "true", "false" or ""
	Go         string
	Source     string // where Commit came from: "ldflags", "vcs" or ""
}

// readBuild merges the -ldflags stamps with debug.ReadBuildInfo; read is
// debug.ReadBuildInfo (a seam for tests).
func readBuild(read func() (*debug.BuildInfo, bool)) buildInfo {
	b := buildInfo{Version: version, Commit: commit, CommitTime: commitTime, Modified: modified,
		Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if commit != "" {
		b.Source = "ldflags"
	}
	bi, ok := read()
	if !ok {
		b.Module = "unknown (the binary carries no build information)"
		return b
	}
	b.Go = bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	b.Module = bi.Main.Path + " " + bi.Main.Version
	if bi.Main.Path == "" {
		b.Module = "unknown (built outside module mode)"
	}
	if b.Version == defaultVersion && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version // go install github.com/storesim/storesim/cmd/storesim@v…
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if b.Commit == "" && vcs["vcs.revision"] != "" {
		b.Commit, b.Source = vcs["vcs.revision"], "vcs"
	}
	if b.CommitTime == "" {
		b.CommitTime = vcs["vcs.time"]
	}
	if b.Modified == "" {
		b.Modified = vcs["vcs.modified"]
	}
	return b
}

// defaultVersion is version when nothing stamped it.
const defaultVersion = "dev"

func init() {
	if version == defaultVersion {
		version = readBuild(debug.ReadBuildInfo).Version
	}
}

const unknownVCS = "unknown (no VCS information in the binary: it was built with -buildvcs=false, as GOFLAGS sets on some machines, or outside a git checkout; stamp it with -ldflags \"-X main.commit=$(git rev-parse HEAD)\")"

// write prints the version block of storesim version and --version.
func (b buildInfo) write(w io.Writer, name string) {
	orUnknown := func(s, why string) string {
		if s == "" {
			return "unknown" + why
		}
		return s
	}
	fmt.Fprintf(w, "%s %s\n", name, b.Version)
	fmt.Fprintf(w, "module:   %s\n", b.Module)
	if b.Commit == "" {
		fmt.Fprintf(w, "commit:   %s\n", unknownVCS)
	} else {
		fmt.Fprintf(w, "commit:   %s (from %s)\n", b.Commit, b.Source)
	}
	fmt.Fprintf(w, "time:     %s\n", orUnknown(b.CommitTime, ""))
	fmt.Fprintf(w, "modified: %s\n", orUnknown(b.Modified, ""))
	fmt.Fprintf(w, "go:       %s\n", b.Go)
	if b.Version == defaultVersion {
		fmt.Fprintln(w, strings.TrimSpace(`note:     the version is unknown ("dev"): not stamped with -ldflags "-X main.version=…" and not installed as module@version`))
	}
}
