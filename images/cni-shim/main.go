// cni-shim is what lands on a node's /opt/cni/bin for sriovop's CNI plugins (sriov, ib-sriov,
// sriovop-attach). The plugins' logic runs in the sriovop cni-server on the node (a pod of the config
// daemon's DaemonSet); the shim only carries one invocation there and the answer back, so the host
// needs nothing but the kernel: no Python, no libraries (static, CGO_ENABLED=0, standard library).
//
//	<name>                     a CNI plugin invocation: connects to $SRIOVOP_CNI_SOCKET_DIR/<name>.sock
//	                           (default /var/run/sriovop/cni), sends {"env": {CNI_*...}, "stdin": "..."}
//	                           with the pod's network namespace as an SCM_RIGHTS file descriptor, then
//	                           writes the server's stdout/stderr and exits with its exit code
//	cni-shim install NAME...   copies itself to $SRIOVOP_CNI_BIN_DIR/NAME (default /host/opt/cni/bin)
//	                           through a temporary file and a rename, as upstream's CNI images do
//
// Why a file descriptor: the server runs in its own mount namespace and need not see the runtime's
// netns path; an open namespace descriptor is valid across mount namespaces.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	defaultSocketDir = "/var/run/sriovop/cni"
	defaultBinDir    = "/host/opt/cni/bin"
	// A CNI ADD may wait for IPAM and for a VF lock; the runtime has its own deadline above this.
	timeout = 5 * time.Minute
)

type request struct {
	Env   map[string]string `json:"env"`
	Stdin string            `json:"stdin"`
}

type response struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// cniError prints a CNI error result (code 999: plugin specific) and returns the exit code 1.
func cniError(msg, details string) int {
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"cniVersion": "1.0.0", "code": 999, "msg": msg, "details": details})
	return 1
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func call(name string) int {
	socketPath := filepath.Join(envOr("SRIOVOP_CNI_SOCKET_DIR", defaultSocketDir), name+".sock")
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return cniError("reading stdin", err.Error())
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "CNI_") {
			env[k] = v
		}
	}
	body, err := json.Marshal(request{Env: env, Stdin: string(stdin)})
	if err != nil {
		return cniError("encoding the request", err.Error())
	}
	conn, err := net.DialTimeout("unix", socketPath, 10*time.Second)
	if err != nil {
		return cniError(fmt.Sprintf("sriovop cni-server socket %s is missing or refuses connections", socketPath),
			fmt.Sprintf("%v (is the sriov-cni-server container of the config daemon running on this node?)", err))
	}
	uc := conn.(*net.UnixConn)
	defer uc.Close()
	_ = uc.SetDeadline(time.Now().Add(timeout))
	var oob []byte
	if path := env["CNI_NETNS"]; path != "" {
		// A netns that cannot be opened (gone after the pod died) is sent as no descriptor; the server
		// decides what that means for the command (DEL: nothing left to undo in the pod).
		if ns, err := os.Open(path); err == nil {
			defer ns.Close()
			oob = syscall.UnixRights(int(ns.Fd()))
		}
	}
	n, _, err := uc.WriteMsgUnix(body, oob, nil)
	if err == nil && n < len(body) {
		_, err = uc.Write(body[n:])
	}
	if err == nil {
		err = uc.CloseWrite()
	}
	if err != nil {
		return cniError("sending the request to "+socketPath, err.Error())
	}
	raw, err := io.ReadAll(uc)
	if err != nil {
		return cniError("reading the answer from "+socketPath, err.Error())
	}
	var resp response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return cniError("the answer from "+socketPath+" is not valid", err.Error())
	}
	_, _ = os.Stdout.WriteString(resp.Stdout)
	_, _ = os.Stderr.WriteString(resp.Stderr)
	return resp.ExitCode
}

func install(names []string) int {
	binDir := envOr("SRIOVOP_CNI_BIN_DIR", defaultBinDir)
	for _, name := range names {
		if strings.HasPrefix(name, "-") {
			continue // --no-sleep, passed by the operator's init containers to upstream's images
		}
		if err := copySelf(filepath.Join(binDir, name)); err != nil {
			fmt.Fprintln(os.Stderr, "cni-shim: installing", name+":", err)
			return 1
		}
		fmt.Printf("cni-shim: installed %s\n", filepath.Join(binDir, name))
	}
	return 0
}

func copySelf(target string) error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	tmp := target + ".cni-shim-tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, self)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "install" {
		os.Exit(install(os.Args[2:]))
	}
	name := filepath.Base(os.Args[0])
	if os.Getenv("CNI_COMMAND") == "" {
		fmt.Fprintf(os.Stderr, "usage: %s install NAME... | invoked as a CNI plugin (CNI_COMMAND set)\n", name)
		os.Exit(2)
	}
	os.Exit(call(name))
}
