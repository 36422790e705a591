// pause is the pod sandbox process for the development cluster's containerd (its CRI
// sandbox_image is registry.k8s.io/pause:3.10, which no registry can serve here). It holds the
// pod's namespaces open, reaps zombies when it is PID 1 of a shared PID namespace, and exits
// cleanly on SIGINT or SIGTERM, the same contract as the upstream pause binary.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const version = "3.10"

func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Printf("pause %s (sriovop)\n", version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "warning: pause should be the first process")
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			fmt.Fprintf(os.Stderr, "shutting down, got signal: %v\n", sig)
			os.Exit(0)
		}
	}
}
