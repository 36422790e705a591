// standin plays the part of an upstream component that cannot be built here (sriov-cni,
// ib-sriov-cni, the SR-IOV device plugin) in the development cluster, under the image names the
// operator renders, so that the shipped manifests apply unchanged. It never pretends to work:
//
//	standin install NAME [--no-sleep]  copies itself to /host/opt/cni/bin/NAME, as upstream's CNI
//	                                   images do from their init container, then sleeps unless --no-sleep
//	standin sleep [ignored args...]    a long-running container that exits on SIGINT/SIGTERM
//
// Invoked as a CNI plugin (CNI_COMMAND set), it answers VERSION and fails every other command with
// a CNI error that says it is a stand-in, so a pod attached to such a network fails loudly.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

const cniBinDir = "/host/opt/cni/bin"

var supported = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0"}

func cni(command string) int {
	out := json.NewEncoder(os.Stdout)
	if command == "VERSION" {
		_ = out.Encode(map[string]any{"cniVersion": "1.0.0", "supportedVersions": supported})
		return 0
	}
	_ = out.Encode(map[string]any{
		"cniVersion": "1.0.0",
		"code":       999,
		"msg":        filepath.Base(os.Args[0]) + " is a development stand-in",
		"details":    "upstream's plugin cannot be built in this environment; this binary only answers VERSION",
	})
	return 1
}

func sleep() int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	sig := <-signals
	fmt.Fprintf(os.Stderr, "standin: exiting on %v\n", sig)
	return 0
}

func install(name string, args []string) int {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		return 1
	}
	defer self.Close()
	target := filepath.Join(cniBinDir, name)
	tmp := target + ".standin-tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err == nil {
		_, err = io.Copy(dst, self)
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin: installing", target+":", err)
		return 1
	}
	fmt.Printf("standin: installed %s (a stand-in for upstream's %s plugin)\n", target, name)
	for _, a := range args {
		if a == "--no-sleep" {
			return 0
		}
	}
	return sleep()
}

func main() {
	if command := os.Getenv("CNI_COMMAND"); command != "" {
		os.Exit(cni(command))
	}
	if len(os.Args) >= 3 && os.Args[1] == "install" {
		os.Exit(install(os.Args[2], os.Args[3:]))
	}
	if len(os.Args) >= 2 && os.Args[1] == "sleep" {
		os.Exit(sleep())
	}
	fmt.Fprintln(os.Stderr, "usage: standin install NAME [--no-sleep] | standin sleep [args...]")
	os.Exit(2)
}
