// SPDX-License-Identifier: MIT

// Package cluster runs a real Kubernetes control plane on 127.0.0.1 for the scenario tests:
// etcd, kube-apiserver, kube-controller-manager (only the controllers the scenarios need),
// KWOK as the kubelet of every node, and the kube-scheduler under test. Every binary is built
// from this Go module; each process runs in its own process group with its log in the
// cluster's directory, and Stop ends them all, even after a failure.
package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Process is one daemon of the cluster.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

var (
	liveMu sync.Mutex
	live   = map[*Process]struct{}{}
)

// StartProcess starts binary with args, its output in dir/<name>.log, in a new process group
// that receives SIGKILL if this process dies first (Pdeathsig: a backstop for kill -9).
func StartProcess(dir, name, binary string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	liveMu.Lock()
	live[p] = struct{}{}
	liveMu.Unlock()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Pid is the process id (and process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM to the process group, then SIGKILL after grace; it waits for the exit.
func (p *Process) Stop(grace time.Duration) {
	defer func() {
		liveMu.Lock()
		delete(live, p)
		liveMu.Unlock()
	}()
	if exited, _ := p.Exited(); exited {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL) // children of a dead leader, if any
		return
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
}

// KillAll kills every process started here that is still running: for signal handlers.
func KillAll() {
	liveMu.Lock()
	defer liveMu.Unlock()
	for p := range live {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	}
}
