// standin plays the part of an upstream component that cannot be built here (the SR-IOV device
// plugin) in the development cluster, under the image name the operator renders, so that the shipped
// manifests apply unchanged. It never pretends to work:
//
//	standin sleep [ignored args...]    a long-running container that exits on SIGINT/SIGTERM
//
// (The CNI plugins are sriovop's own: images/cni-shim.)
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func sleep() int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	sig := <-signals
	fmt.Fprintf(os.Stderr, "standin: exiting on %v\n", sig)
	return 0
}

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "sleep" {
		os.Exit(sleep())
	}
	fmt.Fprintln(os.Stderr, "usage: standin sleep [args...]")
	os.Exit(2)
}
