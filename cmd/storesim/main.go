// Command storesim runs seed swarms, replays and shrinks failing seeds, runs
// scenario files and certifies drivers: the command line of package
// [github.com/storesim/storesim/cmd/storesim/cli], whose doc lists the
// commands and exit codes. A driver author builds the same CLI with their
// own drivers by handing [cli.Main] the factories (cli.Options.Drivers).
//
// The version is stamped at build time:
//
//	go build -ldflags "-X main.version=v0.3.0" ./cmd/storesim
package main

import (
	"os"

	"github.com/storesim/storesim/cmd/storesim/cli"
)

// version is the storesim version, stamped with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Options{Version: version}))
}
