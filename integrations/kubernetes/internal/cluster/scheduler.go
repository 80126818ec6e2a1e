// SPDX-License-Identifier: MIT

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Scheduler is a running kube-scheduler.
type Scheduler struct {
	proc       *Process
	MetricsURL string
	token      string
}

// StartScheduler runs binary with the KubeSchedulerConfiguration in configPath (its profiles
// choose the plugins: stock DefaultPreemption or an out-of-tree PostFilter). The harness fills
// in the connection to this cluster and turns leader election off; everything else is kept.
// Any scheduler already running is stopped first. name tells the log files apart.
func (c *Cluster) StartScheduler(ctx context.Context, name, binary, configPath string) (*Scheduler, error) {
	c.StopScheduler()
	config, err := c.schedulerConfig(name, configPath)
	if err != nil {
		return nil, err
	}
	return c.runScheduler(ctx, name, binary, "--config="+config,
		"--feature-gates="+strings.Join(FeatureGates, ","), "--v=2")
}

// StartDeployedScheduler runs binary as a Deployment's container would run it: with the
// container's arguments `args` and exactly the KubeSchedulerConfiguration `config` (its
// ConfigMap's), whose file replaces the value of the --config argument. Only what running outside
// the cluster needs is added: clientConnection.kubeconfig (in a pod, the in-cluster config), a
// free secure port on 127.0.0.1 (in a pod, 10259 of its own address) and the kubeconfig of its
// delegated authentication and authorization. Leader election and everything else stay as
// configured. Any scheduler already running is stopped first.
func (c *Cluster) StartDeployedScheduler(ctx context.Context, name, binary string, config []byte, args []string) (*Scheduler, error) {
	c.StopScheduler()
	parsed := map[string]any{}
	if err := yaml.Unmarshal(config, &parsed); err != nil {
		return nil, fmt.Errorf("the deployed configuration: %w", err)
	}
	if parsed["kind"] != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("the deployed configuration is a %v, not a KubeSchedulerConfiguration", parsed["kind"])
	}
	connection, _ := parsed["clientConnection"].(map[string]any)
	if connection == nil {
		connection = map[string]any{}
	}
	if connection["kubeconfig"] != nil {
		return nil, fmt.Errorf("the deployed configuration sets clientConnection.kubeconfig; in a pod it uses the in-cluster config")
	}
	connection["kubeconfig"] = c.Kubeconfig
	parsed["clientConnection"] = connection
	text, err := yaml.Marshal(parsed)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(c.Dir, name+".config.yaml")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return nil, err
	}
	var rest []string
	replaced := false
	for _, a := range args {
		if strings.HasPrefix(a, "--config=") {
			rest = append(rest, "--config="+path)
			replaced = true
			continue
		}
		if strings.HasPrefix(a, "--secure-port=") || strings.HasPrefix(a, "--bind-address=") {
			return nil, fmt.Errorf("the container's argument %s: the harness chooses the address", a)
		}
		rest = append(rest, a)
	}
	if !replaced {
		return nil, fmt.Errorf("the container's arguments %q have no --config=", args)
	}
	return c.runScheduler(ctx, name, binary, rest...)
}

// runScheduler starts binary with args on a free secure port, authenticated by this cluster's
// admin kubeconfig, and waits until it is ready.
func (c *Cluster) runScheduler(ctx context.Context, name, binary string, args ...string) (*Scheduler, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p, err := StartProcess(c.Dir, name, binary, append(args,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig)...)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{proc: p, MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", port), token: c.Token}
	c.scheduler = s
	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	if err := waitHTTP(ctx, p, readyz, c.Token, 60*time.Second); err != nil {
		c.StopScheduler()
		return nil, err
	}
	return s, nil
}

// StopScheduler stops the running scheduler, if any.
func (c *Cluster) StopScheduler() {
	if c.scheduler != nil {
		c.scheduler.proc.Stop(10 * time.Second)
		c.scheduler = nil
	}
}

// LogPath is the scheduler's log file.
func (s *Scheduler) LogPath() string { return s.proc.LogPath }

func (c *Cluster) schedulerConfig(name, configPath string) (string, error) {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return "", err
	}
	config := map[string]any{}
	if err := yaml.Unmarshal(raw, &config); err != nil {
		return "", fmt.Errorf("%s: %w", configPath, err)
	}
	connection, _ := config["clientConnection"].(map[string]any)
	if connection == nil {
		connection = map[string]any{}
	}
	connection["kubeconfig"] = c.Kubeconfig
	if _, ok := connection["qps"]; !ok {
		connection["qps"] = 1000 // binds are not what is measured
		connection["burst"] = 2000
	}
	config["clientConnection"] = connection
	config["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(config)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, name+".config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

// Sample is one series of a Prometheus histogram: the labels, the count, the sum and the
// cumulative buckets (upper bound -> count).
type Sample struct {
	Labels  map[string]string
	Count   float64
	Sum     float64
	Buckets map[float64]float64
}

// Quantile estimates the q-quantile from the buckets the way PromQL's histogram_quantile does:
// linear interpolation inside the bucket that holds it (the lowest bucket starts at 0; a
// quantile in the +Inf bucket is the highest finite bound); 0 without observations.
func (s Sample) Quantile(q float64) float64 {
	bounds := make([]float64, 0, len(s.Buckets))
	for b := range s.Buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || s.Count == 0 {
		return 0
	}
	rank := q * s.Count
	lower, below := 0.0, 0.0
	for i, b := range bounds {
		c := s.Buckets[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				if i == 0 {
					return 0
				}
				return bounds[i-1]
			}
			if c == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(c-below)
		}
		lower, below = b, c
	}
	return bounds[len(bounds)-1]
}

// ExtensionPointDurations scrapes scheduler_framework_extension_point_duration_seconds and
// returns the series of the given extension points (e.g. PostFilter, PodGroupPostFilter).
func (s *Scheduler) ExtensionPointDurations(points ...string) ([]Sample, error) {
	code, body, err := httpGet(s.MetricsURL, s.token)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", s.MetricsURL, code, body)
	}
	wanted := map[string]bool{}
	for _, p := range points {
		wanted[p] = true
	}
	series := map[string]*Sample{}
	const metric = "scheduler_framework_extension_point_duration_seconds"
	scanner := bufio.NewScanner(bytes.NewReader(body))
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		line := scanner.Text()
		var kind string
		switch {
		case strings.HasPrefix(line, metric+"_sum{"):
			kind = "sum"
		case strings.HasPrefix(line, metric+"_count{"):
			kind = "count"
		case strings.HasPrefix(line, metric+"_bucket{"):
			kind = "bucket"
		default:
			continue
		}
		open, closing := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		labels := parseLabels(line[open+1 : closing])
		if !wanted[labels["extension_point"]] {
			continue
		}
		value, err := strconv.ParseFloat(strings.TrimSpace(line[closing+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		le := labels["le"]
		delete(labels, "le")
		key := fmt.Sprint(labels["extension_point"], "|", labels["status"], "|", labels["profile"])
		sample := series[key]
		if sample == nil {
			sample = &Sample{Labels: labels, Buckets: map[float64]float64{}}
			series[key] = sample
		}
		if kind == "bucket" {
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return nil, fmt.Errorf("metrics line %q: le: %w", line, err)
			}
			sample.Buckets[bound] = value
		} else if kind == "sum" {
			sample.Sum = value
		} else {
			sample.Count = value
		}
	}
	out := make([]Sample, 0, len(series))
	for _, s := range series {
		out = append(out, *s)
	}
	return out, scanner.Err()
}

func parseLabels(text string) map[string]string {
	labels := map[string]string{}
	for _, part := range strings.Split(text, ",") {
		k, v, ok := strings.Cut(part, "=")
		if ok {
			labels[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	return labels
}
