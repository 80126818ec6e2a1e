// SPDX-License-Identifier: MIT

// Package e2e runs the preemption scenarios against a real control plane on 127.0.0.1
// (etcd, kube-apiserver, kube-controller-manager, KWOK) with one or more kube-scheduler
// variants on identical states, and writes what each did as JSON and Markdown.
//
//	go test -c -o build/kubernetes/bin/e2e.test ./test/e2e
//	build/kubernetes/bin/e2e.test -test.v -bin build/kubernetes/bin \
//	    -variant stock=build/kubernetes/bin/kube-scheduler:config/stock.yaml \
//	    -results build/kubernetes/results
//
// With -deploy deploy/topopreempt-scheduler.yaml, TestDeployManifests first checks the deployment
// manifests against the API server and runs the -bin kube-scheduler with their configuration
// (deploy_test.go); -test.run TestDeployManifests runs that check alone.
//
// Run the compiled test binary directly (not `go test`): on SIGTERM or SIGINT it stops every
// process it started before exiting, which `timeout` relies on.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/topopreempt/topopreempt/integrations/kubernetes/internal/cluster"
)

type variantFlags []Variant

func (v *variantFlags) String() string { return fmt.Sprint(*v) }

func (v *variantFlags) Set(text string) error {
	name, rest, ok := strings.Cut(text, "=")
	binary, config, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || name == "" {
		return fmt.Errorf("want NAME=BINARY:CONFIG, got %q", text)
	}
	*v = append(*v, Variant{Name: name, Binary: binary, Config: config})
	return nil
}

var (
	binDir     = flag.String("bin", "", "directory of etcd, kube-apiserver, kube-controller-manager, kwok (and kubectl, kube-scheduler for -deploy)")
	resultsDir = flag.String("results", "", "where results.json and results.md go (default: none)")
	keepDir    = flag.Bool("keep", false, "keep the cluster directory (logs, configs) after the run")
	scaleNodes = flag.Int("scale-nodes", 1000, "nodes of the KWOK scale scenario (10 pods each); 0 skips it")
	scaleModes = flag.String("scale-modes", "extres", "GPU modes of the scale scenario: extres, dra or both (comma-separated)")
	scaleVars  = flag.String("scale-variants", "", "comma-separated variant names that run the scale scenario (default: every variant)")
	scalePre   = flag.Int("scale-preemptors", 1, "preemptors the scale scenario submits one after another per variant (each once the previous ran or gave up); >1 adds per-call PostFilter times to the results")
	baseline   = flag.String("baseline", "", "a variant name: assert that every other variant does at least as well as it (see compareWithBaseline)")
	only       = flag.String("scenarios", "", "comma-separated scenario names (NAME or NAME/MODE) to run (default: all)")
	variants   variantFlags
)

func init() {
	flag.Var(&variants, "variant", "NAME=BINARY:CONFIG, a kube-scheduler and its KubeSchedulerConfiguration; repeatable")
}

func TestMain(m *testing.M) {
	flag.Parse()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		logf("%s: stopping every process of the run", sig)
		cluster.KillAll()
		os.Exit(2)
	}()
	code := m.Run()
	cluster.KillAll()
	os.Exit(code)
}

func TestScenarios(t *testing.T) {
	if *binDir == "" || len(variants) == 0 {
		t.Skip("needs -bin and at least one -variant (see the package comment)")
	}
	scaleVariants := commaList(*scaleVars)
	for _, name := range scaleVariants {
		if !slices.ContainsFunc(variants, func(v Variant) bool { return v.Name == name }) {
			t.Fatalf("-scale-variants names %q, which no -variant defines", name)
		}
	}
	dir, err := os.MkdirTemp("", "topopreempt-k8s.")
	if err != nil {
		t.Fatal(err)
	}
	if !*keepDir {
		defer os.RemoveAll(dir)
	}
	ctx := context.Background()
	c, err := startControlPlane(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	wanted := commaList(*only)
	var results []*Result
	var modes []GPUMode
	for _, m := range commaList(*scaleModes) {
		modes = append(modes, GPUMode(m))
	}
	for _, s := range Scenarios(*scaleNodes, modes, *scalePre, scaleVariants) {
		id := s.Name + "/" + string(s.Mode)
		if len(wanted) > 0 && !slices.Contains(wanted, s.Name) && !slices.Contains(wanted, id) {
			continue
		}
		t.Run(id, func(t *testing.T) {
			for _, v := range variants {
				if len(s.Variants) > 0 && !slices.Contains(s.Variants, v.Name) {
					continue
				}
				res, err := runOn(ctx, c, dir, s, v)
				if err != nil {
					t.Fatalf("%s with %s: %v", s.Name, v.Name, err)
				}
				logf("%s/%s: ran=%v topology=%v (%s) victims=%d cost=%g wasted=%d pdb=%d; optimum %d victims cost %g",
					s.Name, v.Name, res.PreemptorRan, res.TopologyHonoured, res.TopologyNote, len(res.Victims),
					res.VictimCost, res.WastedEvictions, res.PDBViolations, res.OptimumVictims, res.OptimumCost)
				results = append(results, res)
				checkInvariants(t, s, res)
				if res.WhatIf != nil && !res.WhatIf.Agrees {
					t.Errorf("%s/%s with %s: topopreempt-whatif on a dump of the state: %s", s.Name, s.Mode, v.Name, res.WhatIf.Note)
				}
			}
		})
	}
	if *resultsDir != "" {
		if err := writeResults(*resultsDir, results); err != nil {
			t.Fatal(err)
		}
	}
	if *baseline != "" {
		compareWithBaseline(t, *baseline, results)
		compareCrowds(t, *baseline, results)
	}
}

// commaList splits a comma-separated flag value, dropping empty names.
func commaList(value string) []string {
	var out []string
	for _, name := range strings.Split(value, ",") {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and KWOK in dir and
// creates the priority classes and the DeviceClass every scenario uses.
func startControlPlane(ctx context.Context, dir string) (*cluster.Cluster, error) {
	started := time.Now()
	c, err := cluster.Start(ctx, dir, cluster.BinariesIn(*binDir))
	if err != nil {
		return nil, err
	}
	logf("control plane ready in %.1fs at %s (dir %s)", time.Since(started).Seconds(), c.URL, dir)
	if err := ensureClusterObjects(ctx, c.Client); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// runOn runs s with v on the shared control plane shared, or, where s.OwnControlPlane, on one
// started in a subdirectory of dir for this run and stopped (its data removed) after it.
func runOn(ctx context.Context, shared *cluster.Cluster, dir string, s *Scenario, v Variant) (*Result, error) {
	if !s.OwnControlPlane {
		return Run(ctx, shared, s, v)
	}
	own := filepath.Join(dir, fmt.Sprintf("%s-%s-%s", s.Name, s.Mode, v.Name))
	if err := os.Mkdir(own, 0o755); err != nil {
		return nil, err
	}
	c, err := startControlPlane(ctx, own)
	if err != nil {
		return nil, err
	}
	defer func() {
		c.Stop()
		if !*keepDir {
			_ = os.RemoveAll(own) // etcd's data for 10,000 pods: hundreds of MB
		}
	}()
	return Run(ctx, c, s, v)
}

// compareWithBaseline asserts issue 21's "done when" claims of every variant against the
// baseline on the same scenario and GPU mode, wherever the requirement is visible to the
// scheduler (DRA claims, PodGroup constraints; not NUMA behind an extended-resource count):
// the variant leaves no wasted eviction (also where the baseline did not run that scenario);
// where the baseline's preemptor ran inside its requirement, the variant's did too, at no higher
// victim cost.
func compareWithBaseline(t *testing.T, base string, results []*Result) {
	t.Helper()
	type key struct {
		scenario string
		mode     GPUMode
	}
	bases := map[key]*Result{}
	for _, r := range results {
		if r.Scheduler == base {
			bases[key{r.Scenario, r.Mode}] = r
		}
	}
	for _, r := range results {
		if r.Scheduler == base {
			continue
		}
		id := fmt.Sprintf("%s/%s: %s vs %s", r.Scenario, r.Mode, r.Scheduler, base)
		if r.Mode == ExtendedResource && r.SameNUMA {
			logf("%s: NUMA invisible to both schedulers, not compared", id)
			continue
		}
		// Checked with or without a baseline result: -scale-variants may leave the baseline out
		// of the scale state, and wasted evictions need nothing to compare with.
		if r.WastedEvictions > 0 {
			t.Errorf("%s: %d wasted evictions", id, r.WastedEvictions)
		}
		if r.EvictedTwice > 0 {
			t.Errorf("%s: %d victims evicted for two preemptors", id, r.EvictedTwice)
		}
		b, ok := bases[key{r.Scenario, r.Mode}]
		if !ok {
			logf("%s: no %s result here (-scale-variants): wasted evictions checked, nothing compared", id, base)
			continue
		}
		if r.ReachOptimum && (!r.PreemptorRan || !r.TopologyHonoured || r.VictimCost != r.OptimumCost) {
			t.Errorf("%s: the preemptor ran=%v at cost %g; the optimum is %g (%s)", id, r.PreemptorRan, r.VictimCost, r.OptimumCost, r.Optimum)
		}
		if r.PDBViolations > b.PDBViolations {
			t.Errorf("%s: %d PDB violations, the baseline %d", id, r.PDBViolations, b.PDBViolations)
		}
		if b.PreemptorRan && b.TopologyHonoured {
			if !r.PreemptorRan || !r.TopologyHonoured {
				t.Errorf("%s: the baseline placed the preemptor inside its requirement, this variant did not (%s)", id, r.TopologyNote)
			} else if r.VictimCost > b.VictimCost+1e-9 {
				t.Errorf("%s: victim cost %g above the baseline's %g", id, r.VictimCost, b.VictimCost)
			}
		}
	}
}

// checkInvariants holds for every scheduler wherever the requirement is visible to it (DRA
// claims, PodGroup topology constraints; not NUMA behind an extended-resource count): a
// preemptor that ran has its topology requirement met, and nothing runs where no placement
// exists. How good the victim set is is reported, not asserted: that is the comparison.
func checkInvariants(t *testing.T, s *Scenario, res *Result) {
	t.Helper()
	if s.Mode == ExtendedResource && s.Preemptor.SameNUMA {
		return
	}
	if res.PreemptorRan && !res.TopologyHonoured {
		t.Errorf("%s/%s: preemptor ran outside its requirement: %s", s.Name, res.Scheduler, res.TopologyNote)
	}
	if !s.Schedulable && res.PreemptorRan {
		t.Errorf("%s/%s: preemptor ran although no placement exists", s.Name, res.Scheduler)
	}
}

func writeResults(dir string, results []*Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(markdown(results)), 0o644)
}

func markdown(results []*Result) string {
	var b strings.Builder
	b.WriteString("| scenario | GPUs as | scheduler | preemptor ran | topology | victims | cost | wasted | PDB violations | optimum (victims, cost) | PostFilter calls, total ms, p50/p99 ms |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		var timing []string
		for _, p := range r.PostFilter {
			timing = append(timing, fmt.Sprintf("%s %s: %d, %.1f, %.2g/%.2g", p.ExtensionPoint, p.Status, p.Count,
				1000*p.SumSeconds, 1000*p.P50Seconds, 1000*p.P99Seconds))
		}
		ran := "no"
		if r.PreemptorRan {
			ran = fmt.Sprintf("yes (%.1fs)", r.SecondsToRun)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %v: %s | %d | %g | %d | %d | %d, %g | %s |\n", r.Scenario, r.Mode, r.Scheduler, ran,
			r.TopologyHonoured, r.TopologyNote, len(r.Victims), r.VictimCost, r.WastedEvictions, r.PDBViolations,
			r.OptimumVictims, r.OptimumCost, strings.Join(timing, "; "))
	}
	b.WriteString("\nVictims:\n\n")
	for _, r := range results {
		var names []string
		for _, v := range r.Victims {
			names = append(names, fmt.Sprintf("%s (prio %d, cost %g, GPUs %v%s)", v.Pod, v.Priority, v.Cost, v.GPUs,
				map[bool]string{true: ", wasted", false: ""}[v.Wasted]))
		}
		if len(names) > 12 {
			names = append(names[:12], fmt.Sprintf("… %d more", len(names)-12))
		}
		fmt.Fprintf(&b, "- %s (%s) / %s: %s; optimum: %s\n", r.Scenario, r.Mode, r.Scheduler, strings.Join(names, ", "), r.Optimum)
	}
	b.WriteString(whatIfMarkdown(results))
	b.WriteString(sequenceMarkdown(results))
	b.WriteString(crowdMarkdown(results))
	return b.String()
}
