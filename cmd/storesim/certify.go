package main

import (
	"context"
	"fmt"
	"io"

	"github.com/storesim/storesim/drivers/registry"
)

func driversCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "storesim drivers: takes no arguments, got %q\n", args)
		return exitUsage
	}
	for _, n := range registry.Names() {
		fmt.Fprintln(stdout, n)
	}
	return exitPass
}

func certifyCmd(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "storesim certify: not built yet")
	return exitUsage
}
