// SPDX-License-Identifier: MIT

package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// FeatureGates are the gates every component gets: the Workload API (GenericWorkload, beta,
// off by default), workload-aware preemption's PodGroup preemption policy and KEP-5732
// topology-aware workload scheduling (both alpha), PodGroup-level ResourceClaims (beta).
// DynamicResourceAllocation is GA and locked on in 1.37.
var FeatureGates = []string{
	"GenericWorkload=true",
	"PodGroupPreemptionPolicy=true",
	"TopologyAwareWorkloadScheduling=true",
	"DRAWorkloadResourceClaims=true",
}

// RuntimeConfig enables the API versions the scenarios use that 1.37 does not serve by
// default: scheduling.k8s.io/v1beta1 (Workload, PodGroup). resource.k8s.io/v1 is on already.
var RuntimeConfig = []string{"scheduling.k8s.io/v1beta1=true", "resource.k8s.io/v1=true"}

// Binaries are the executables the cluster runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Kwok string
}

// BinariesIn names the binaries as `go build -o DIR/` writes them.
func BinariesIn(dir string) Binaries {
	return Binaries{
		Etcd:              filepath.Join(dir, "etcd"), // go.etcd.io/etcd/server/v3, built -o etcd
		APIServer:         filepath.Join(dir, "kube-apiserver"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Kwok:              filepath.Join(dir, "kwok"),
	}
}

// Cluster is a running control plane.
type Cluster struct {
	Dir        string // private directory: data, keys, configs, logs
	URL        string // https://127.0.0.1:port of kube-apiserver
	Token      string // the admin bearer token (group system:masters)
	Kubeconfig string
	Client     kubernetes.Interface
	RestConfig *rest.Config
	procs      []*Process
	scheduler  *Scheduler
}

// FreePort asks the kernel for an unused port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start brings up etcd, kube-apiserver, kube-controller-manager and KWOK in dir and waits
// until the API server is ready. On error everything started is stopped again.
func Start(ctx context.Context, dir string, bin Binaries) (c *Cluster, err error) {
	c = &Cluster{Dir: dir}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	if err = c.startEtcd(ctx, bin.Etcd); err != nil {
		return nil, err
	}
	if err = c.startAPIServer(ctx, bin.APIServer); err != nil {
		return nil, err
	}
	if err = c.startControllerManager(bin.ControllerManager); err != nil {
		return nil, err
	}
	if err = c.startKwok(bin.Kwok); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(name, binary string, args ...string) (*Process, error) {
	p, err := StartProcess(c.Dir, name, binary, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

func (c *Cluster) startEtcd(ctx context.Context, binary string) error {
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	p, err := c.start("etcd", binary,
		"--name=etcd0", "--data-dir="+filepath.Join(c.Dir, "etcd-data"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=etcd0="+peer,
		// A test cluster: durability is not what is measured; 10,000 pods write a lot.
		"--unsafe-no-fsync", "--quota-backend-bytes=4294967296", "--log-level=warn")
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, p, client+"/health", "", 60*time.Second); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, "etcd.url"), []byte(client), 0o644)
}

func (c *Cluster) startAPIServer(ctx context.Context, binary string) error {
	etcdURL, err := os.ReadFile(filepath.Join(c.Dir, "etcd.url"))
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	c.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	if err := c.writeCredentials(); err != nil {
		return err
	}
	p, err := c.start("kube-apiserver", binary,
		"--etcd-servers="+string(etcdURL),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"), // self-signed serving cert
		"--token-auth-file="+filepath.Join(c.Dir, "tokens.csv"),
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(c.Dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(c.Dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No ServiceAccount admission: nothing here runs the token controller, and fake pods
		// need no token. No TaintNodesByCondition: it taints every new node not-ready, and
		// only the node lifecycle controller (which would also evict pods of nodes without
		// heartbeats) lifts that. Priority admission stays on: it resolves priorityClassName.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false", // 10,000-pod fills are not throttled
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"--feature-gates="+strings.Join(FeatureGates, ","),
		"--runtime-config="+strings.Join(RuntimeConfig, ","),
		"--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	c.RestConfig = &rest.Config{
		Host:            c.URL,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, // self-signed, loopback only
		QPS:             2000,
		Burst:           4000,
		Timeout:         60 * time.Second,
	}
	c.Client, err = kubernetes.NewForConfig(c.RestConfig)
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, c.URL+"/readyz", c.Token, 180*time.Second)
}

// writeCredentials writes the admin token file, a kubeconfig for it and the service-account
// signing key pair.
func (c *Cluster) writeCredentials() error {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	c.Token = hex.EncodeToString(raw)
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n", c.Token)
	if err := os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, c.URL, c.Token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(c.Dir, "sa.key"), priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, "sa.pub"),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// startControllerManager runs only what the scenarios rely on: the resourceclaim controller
// (it drops a deleted victim's reservation and deallocates its devices, as in a real cluster)
// and the garbage collector.
func (c *Cluster) startControllerManager(binary string) error {
	_, err := c.start("kube-controller-manager", binary,
		"--kubeconfig="+c.Kubeconfig,
		"--controllers=resourceclaim-controller,garbage-collector-controller",
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--feature-gates="+strings.Join(FeatureGates, ","), "--v=1")
	return err
}

// startKwok runs KWOK as the kubelet of every node, with KWOK's own "fast" stages: a node is
// Ready at once, a bound pod Running at once, a deleted pod gone at once.
func (c *Cluster) startKwok(binary string) error {
	stages := strings.Join([]string{nodefast.DefaultNodeInit,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}, "\n---\n")
	config := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(config, []byte(stages), 0o644); err != nil {
		return err
	}
	_, err := c.start("kwok", binary,
		"--kubeconfig="+c.Kubeconfig, "--config="+config, "--manage-all-nodes=true",
		"--node-lease-duration-seconds=0", "--v=WARN")
	return err
}

// Scheduler returns the running scheduler, if any.
func (c *Cluster) Scheduler() *Scheduler { return c.scheduler }

// Stop ends every process of the cluster, the scheduler first, and waits for them.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	c.StopScheduler()
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
	c.procs = nil
}

// CheckAlive fails if a daemon of the control plane has exited.
func (c *Cluster) CheckAlive() error {
	for _, p := range c.procs {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited (%v); log %s:\n%s", p.Name, err, p.LogPath, tail(p.LogPath, 30))
		}
	}
	return nil
}

var insecureClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback, self-signed
}

// httpGet fetches url with an optional bearer token.
func httpGet(url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := insecureClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitHTTP polls url until it answers 200, the process exits, or limit passes.
func waitHTTP(ctx context.Context, p *Process, url, token string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		code, _, err := httpGet(url, token)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if exited, perr := p.Exited(); exited {
			return fmt.Errorf("%s exited (%v) before %s was ready; log:\n%s", p.Name, perr, url, tail(p.LogPath, 40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %s (last: %d %v); log:\n%s", p.Name, url, limit, code, err, tail(p.LogPath, 40))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
