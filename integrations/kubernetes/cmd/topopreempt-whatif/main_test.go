// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	topopreempt "github.com/topopreempt/topopreempt/integrations/kubernetes/plugin"
)

// The fixture: 4 nodes (racks r0, r1) of 8 DRA GPUs each (NUMA 0: gpu-0..3, NUMA 1: gpu-4..7,
// two per PCIe root), running pods holding exact GPUs through allocated claims at priorities
// 100-1000, a victim PodGroup (disruptionMode All), a finished pod, and two pending
// preemptors: research/finetune-0 (4 GPUs on one NUMA node) and PodGroup research/gang
// (2 x 8 GPUs in one rack). The args are the e2e scenarios' (config/topopreempt.yaml).
const (
	fixture   = "testdata/cluster.json"
	manifest  = "testdata/preemptor.yaml"
	config    = "../../config/topopreempt.yaml"
	fixedTime = "2026-11-26T03:00:00Z"
)

func runTool(t *testing.T, stdin string, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(argv, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// whatif runs the tool on the fixture with --json and decodes its answer.
func whatif(t *testing.T, argv ...string) *answer {
	t.Helper()
	return askJSON(t, "", append([]string{"-f", fixture}, argv...)...)
}

func planOf(t *testing.T, a *answer, solver string) *planView {
	t.Helper()
	for i := range a.Plans {
		if a.Plans[i].Solver == solver {
			if a.Plans[i].Error != "" {
				t.Fatalf("%s: %s", solver, a.Plans[i].Error)
			}
			return &a.Plans[i]
		}
	}
	t.Fatalf("no %s plan in %+v", solver, a.Plans)
	return nil
}

func victimPods(p *planView) []string {
	var out []string
	for _, v := range p.Victims {
		out = append(out, v.Pods...)
	}
	sort.Strings(out)
	return out
}

// pluginView decodes the fixture with client-go's scheme (not the tool's decoder) and builds
// the Inputs the way the plugin reads its scheduler snapshot (bound, non-terminal pods by node).
func pluginView(t *testing.T) (*topopreempt.Inputs, []*corev1.Pod, map[string]*schedulingv1beta1.PodGroup) {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var list metav1.List
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("decode the fixture: %v", err)
	}
	now, _ := time.Parse(time.RFC3339, fixedTime)
	in := &topopreempt.Inputs{Pods: map[string][]*corev1.Pod{}, Now: now}
	var all []*corev1.Pod
	groups := map[string]*schedulingv1beta1.PodGroup{}
	for _, item := range list.Items {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(item.Raw, nil, nil)
		if err != nil {
			t.Fatalf("decode an item: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.Node:
			in.Nodes = append(in.Nodes, o)
		case *corev1.Pod:
			all = append(all, o)
			if o.Spec.NodeName != "" && o.Status.Phase != corev1.PodSucceeded && o.Status.Phase != corev1.PodFailed {
				in.Pods[o.Spec.NodeName] = append(in.Pods[o.Spec.NodeName], o)
			}
		case *resourcev1.ResourceSlice:
			in.Slices = append(in.Slices, o)
		case *resourcev1.ResourceClaim:
			in.Claims = append(in.Claims, o)
		case *schedulingv1beta1.PodGroup:
			groups[o.Namespace+"/"+o.Name] = o
		default:
			t.Fatalf("unexpected %T in the fixture", obj)
		}
	}
	in.PodGroup = func(ns, name string) *schedulingv1beta1.PodGroup { return groups[ns+"/"+name] }
	return in, all, groups
}

// crossCheck asks the plugin's own path (DecideAsPlugin: its mirror of the C-ABI cluster, as
// PostFilter asks) and compares with the tool's default-solver plan.
func crossCheck(t *testing.T, got *planView, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup, in *topopreempt.Inputs) {
	t.Helper()
	args := topopreempt.DefaultArgs()
	// config/topopreempt.yaml's args, typed out again so that the check does not go through
	// the tool's config reader.
	args.Drivers = []string{"gpu.topopreempt.dev"}
	args.ExtendedResource = "topopreempt.dev/gpu"
	zero := 0.0
	args.Cost = []topopreempt.CostTerm{{Model: "extra", Floor: &zero}}
	plan, victims, pdb, err := topopreempt.DecideAsPlugin(&args, in, pods, group)
	if err != nil {
		t.Fatalf("the plugin's path: %v", err)
	}
	if got.PDB == nil || pdb.Violations != got.PDB.Violations || pdb.Proven != got.PDB.Proven || pdb.Pass != got.PDB.Pass {
		t.Fatalf("the tool's PDB outcome %+v differs from the plugin's %+v", got.PDB, pdb)
	}
	var want []string
	for _, w := range victims {
		for _, p := range w.Pods {
			want = append(want, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(want)
	if plan.Status != got.Status || plan.Cost != got.Cost || !slices.Equal(want, victimPods(got)) ||
		!slices.Equal(plan.Hosts, got.Nodes) || plan.Target != got.Target {
		t.Fatalf("the tool says %s cost %g victims %v on %v (%s); the plugin says %s cost %g victims %v on %v (%s)",
			got.Status, got.Cost, victimPods(got), got.Nodes, got.Target, plan.Status, plan.Cost, want, plan.Hosts, plan.Target)
	}
}

// The pending pod wants 4 GPUs on one NUMA node. NUMA 0 of gpu-r0-n0 holds a priority-1000
// pod (not a victim for priority 500); the cheapest NUMA node to empty is NUMA 0 of gpu-r1-n0
// (eval-3 and eval-4, cost 20 each), not NUMA 1 of gpu-r0-n0 (5 + 80), gpu-r1-n0's NUMA 1
// (60), a NUMA node of the sweep PodGroup (evicted whole: 50) or pretrain-0 (300).
func TestPodQuestionMatchesThePlugin(t *testing.T) {
	a := whatif(t, "--pod", "research/finetune-0")
	if a.Preemptor.GPUsPerPod != 4 || a.Preemptor.ReplicaScope != "numa" || a.Preemptor.Priority != 500 {
		t.Fatalf("preemptor %+v, want 4 GPUs inside one numa at priority 500", a.Preemptor)
	}
	if a.Cluster.Nodes != 4 || a.Cluster.Devices != 32 || a.Cluster.RunningWorkloads != 9 {
		t.Fatalf("cluster %+v, want 4 nodes, 32 GPUs, 9 running workloads (the PodGroup one, the finished pod none)", a.Cluster)
	}
	p := planOf(t, a, "branch_and_bound")
	if p.Status != "optimal" || p.Cost != 40 || !slices.Equal(victimPods(p), []string{"batch/eval-3", "batch/eval-4"}) ||
		!slices.Equal(p.Nodes, []string{"gpu-r1-n0"}) {
		t.Fatalf("plan %+v, want optimal cost 40: eval-3 and eval-4 on gpu-r1-n0", p)
	}
	// The target is the node: the pod's CPU, memory and pod slot come from its pool.
	if len(p.Devices) != 4 || !strings.HasSuffix(p.Target, "gpu-r1-n0") {
		t.Fatalf("devices %+v target %s, want 4 GPUs of NUMA 0 of gpu-r1-n0", p.Devices, p.Target)
	}
	for _, d := range p.Devices {
		if !strings.HasPrefix(d.Device, "numa0/") || d.Node != "gpu-r1-n0" || d.Pod != "research/finetune-0" {
			t.Fatalf("device %+v is not on NUMA 0 of gpu-r1-n0", d)
		}
	}
	for _, v := range p.Victims {
		if v.Cost != 20 || v.Extra != 20 || v.Priority != 100 {
			t.Fatalf("victim %+v, want cost 20 at priority 100", v)
		}
	}
	if p.Explanation == "" {
		t.Fatal("no explanation")
	}
	// Every solver that answers finds a valid plan; greedy may not find the cheapest.
	for _, s := range topopreempt.Solvers {
		if q := planOf(t, a, s); q.Status == "infeasible" || q.Cost < p.Cost {
			t.Fatalf("%s: %+v against the proven optimum %g", s, q, p.Cost)
		}
	}
	in, all, _ := pluginView(t)
	var pre *corev1.Pod
	for _, pod := range all {
		if pod.Namespace == "research" && pod.Name == "finetune-0" {
			pre = pod
		}
	}
	crossCheck(t, p, []*corev1.Pod{pre}, nil, in)
}

// The gang needs two whole nodes of one rack. Rack r0 holds a priority-1000 pod, so rack r1:
// everything on gpu-r1-n0 (20 + 20 + 60) and the sweep PodGroup, evicted whole (25 + 25).
func TestPodGroupQuestionMatchesThePlugin(t *testing.T) {
	a := whatif(t, "--podgroup", "research/gang", "--solver", "branch_and_bound")
	if len(a.Plans) != 1 {
		t.Fatalf("%d plans, want the one solver asked for", len(a.Plans))
	}
	p := planOf(t, a, "branch_and_bound")
	want := []string{"batch/eval-3", "batch/eval-4", "serving/rerank-0", "training/sweep-0", "training/sweep-1"}
	if p.Status != "optimal" || p.Cost != 150 || !slices.Equal(victimPods(p), want) || a.Preemptor.GangScope != "rack" {
		t.Fatalf("plan %+v, want optimal cost 150 evicting %v", p, want)
	}
	whole := false
	for _, v := range p.Victims {
		whole = whole || v.Kind == "PodGroup" && v.Name == "training/sweep" && len(v.Pods) == 2 && v.Cost == 50
	}
	if !whole {
		t.Fatalf("victims %+v, want PodGroup training/sweep whole at cost 50", p.Victims)
	}
	in, all, groups := pluginView(t)
	var pods []*corev1.Pod
	for _, pod := range all {
		if strings.HasPrefix(pod.Name, "gang-") {
			pods = append(pods, pod)
		}
	}
	crossCheck(t, p, pods, groups["research/gang"], in)
}

// A pod from a manifest, not in the cluster: its claim comes from the manifest's template
// (2 GPUs under one PCIe root). The free gpu-3 of gpu-r0-n0 shares its root with embed-1 (5).
func TestManifestPreemptorWithClaimTemplate(t *testing.T) {
	a := whatif(t, "--preemptor", manifest, "--solver", "branch_and_bound")
	p := planOf(t, a, "branch_and_bound")
	if a.Preemptor.ReplicaScope != "pcie" || p.Status != "optimal" || p.Cost != 5 ||
		!slices.Equal(victimPods(p), []string{"batch/embed-1"}) || !slices.Equal(p.Nodes, []string{"gpu-r0-n0"}) {
		t.Fatalf("preemptor %+v plan %+v, want embed-1 evicted (cost 5) on gpu-r0-n0", a.Preemptor, p)
	}
}

// One GPU fits on the free gpu-3 of gpu-r0-n0 or gpu-r1-n0: no preemption, and the text says
// that the plugin would leave such a pod to the stock DefaultPreemption.
func TestNoPreemptionNeeded(t *testing.T) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(t.TempDir(), "one.yaml")
	if err := os.WriteFile(one, []byte(strings.Replace(string(data), "count: 2", "count: 1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTool(t, "", "-f", fixture, "--config", config, "--preemptor", one, "--solver", "branch_and_bound")
	if code != exitPlan || !strings.Contains(out, "== branch_and_bound: no_preemption_needed, cost 0") ||
		!strings.Contains(out, "Victims (0)") || !strings.Contains(out, "the plugin would let the stock DefaultPreemption decide") {
		t.Fatalf("exit %d, stderr %s, output:\n%s", code, errOut, out)
	}
}

// Asking for one pod of a PodGroup answers for the pod and points at --podgroup.
func TestPodOfAGroupPointsAtTheGroup(t *testing.T) {
	a := whatif(t, "--pod", "research/gang-0", "--solver", "branch_and_bound")
	if !strings.Contains(strings.Join(a.Warnings, "\n"), "see --podgroup research/gang") || a.Preemptor.Kind != "Pod" {
		t.Fatalf("preemptor %+v warnings %q", a.Preemptor, a.Warnings)
	}
}

// The cost model comes from the flags over the config: with victim_count, the fewest victims.
func TestCostFlagOverridesTheConfig(t *testing.T) {
	a := whatif(t, "--pod", "research/finetune-0", "--cost", "victim_count", "--solver", "branch_and_bound")
	if p := planOf(t, a, "branch_and_bound"); p.Cost != 1 || len(p.Victims) != 1 {
		t.Fatalf("plan %+v, want one victim", p)
	}
}

// The text output names the victims, their cost parts, the node and the explanation; stdin works.
func TestTextOutputFromStdin(t *testing.T) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTool(t, string(data), "--config", config, "--now", fixedTime, "--pod", "research/finetune-0")
	if code != exitPlan {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Preemptor: Pod research/finetune-0, priority 500, 1 pod(s) x 4 GPU(s), each pod inside one numa",
		"== branch_and_bound: optimal, cost 40", "Pod batch/eval-3 on gpu-r1-n0: priority 100, 2 GPU(s), 8000 mCPU, cost 20 (extra 20",
		"PodDisruptionBudgets: 0 violation(s), no plan violates fewer",
		"research/finetune-0: gpu-r1-n0 numa0/", "Explanation:", "== greedy:", "Cost model: extra floor 0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// Kinds missing from the dump are reported; the question is still answered.
func TestMissingKindsAreReported(t *testing.T) {
	dir := t.TempDir()
	nodesOnly := `{"apiVersion":"v1","kind":"List","items":[
	 {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"z","topology.topopreempt.dev/block":"b","topology.topopreempt.dev/rack":"r"}}},
	 {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"x"}}]}`
	path := filepath.Join(dir, "nodes.json")
	if err := os.WriteFile(path, []byte(nodesOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTool(t, "", "-f", path, "--preemptor", manifest, "--json", "--solver", "greedy")
	if code != exitPlan {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var a answer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(a.Warnings, "\n")
	for _, want := range []string{"no Pods", "no ResourceSlices", "no ResourceClaims", "no PodGroups", "ignored (not read by the plugin): 1 v1 ConfigMap"} {
		if !strings.Contains(notes, want) {
			t.Fatalf("warnings %q lack %q", notes, want)
		}
	}
	if a.Plans[0].Status != "infeasible" {
		t.Fatalf("plan %+v, want infeasible (no GPU anywhere)", a.Plans[0])
	}
}

// Bad input exits 2 (3 when only the model cannot express it) with a message naming the
// object and the field, and never panics.
func TestBadInput(t *testing.T) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	fixtureWith := func(old, new string) string {
		if !strings.Contains(string(data), old) {
			t.Fatalf("the fixture lacks %q", old)
		}
		path := filepath.Join(t.TempDir(), "cluster.json")
		if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	truncated := filepath.Join(t.TempDir(), "truncated.json")
	if err := os.WriteFile(truncated, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	noGPU := filepath.Join(t.TempDir(), "nogpu.yaml")
	if err := os.WriteFile(noGPU, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: nginx}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		argv []string
		code int
		want []string
	}{
		{"a field of the wrong type", []string{"-f", fixtureWith(`"priority": 1000,`, `"priority": "high",`), "--pod", "research/finetune-0"},
			exitBadInput, []string{"Pod serving/chat-0", "field spec.priority"}},
		{"an older API version", []string{"-f", fixtureWith(`"apiVersion": "resource.k8s.io/v1",`, `"apiVersion": "resource.k8s.io/v1beta1",`), "--pod", "research/finetune-0"},
			exitBadInput, []string{"ResourceSlice gpu-r0-n0-gpu.topopreempt.dev-x7k2p", "resource.k8s.io/v1beta1"}},
		{"a malformed cost annotation", []string{"-f", fixtureWith(`"topopreempt.dev/cost": "500"`, `"topopreempt.dev/cost": "lots"`), "--pod", "research/finetune-0"},
			exitBadInput, []string{"pod serving/chat-0", "annotation topopreempt.dev/cost"}},
		{"truncated JSON", []string{"-f", truncated, "--pod", "research/finetune-0"}, exitBadInput, []string{"truncated.json: document 1: not JSON or YAML"}},
		{"an unknown pod", []string{"-f", fixture, "--pod", "research/nobody"}, exitBadInput, []string{"Pod research/nobody: not in the input"}},
		{"a running pod as preemptor", []string{"-f", fixture, "--pod", "batch/eval-3"}, exitBadInput, []string{"Pod batch/eval-3: spec.nodeName is gpu-r1-n0"}},
		{"an unknown PodGroup", []string{"-f", fixture, "--podgroup", "research/none"}, exitBadInput, []string{"PodGroup research/none"}},
		{"no preemptor", []string{"-f", fixture}, exitBadInput, []string{"exactly one of --pod"}},
		{"an unknown solver", []string{"-f", fixture, "--pod", "research/finetune-0", "--solver", "magic"}, exitBadInput, []string{`--solver "magic"`}},
		{"an unknown cost model", []string{"-f", fixture, "--pod", "research/finetune-0", "--cost", "cheap"}, exitBadInput, []string{`cost[0].model "cheap"`}},
		{"a config without the plugin", []string{"-f", fixture, "--pod", "research/finetune-0", "--config", "../../config/stock.yaml"}, exitBadInput, []string{"no profile has pluginConfig args for TopoPreempt"}},
		{"a missing file", []string{"-f", "testdata/none.json", "--pod", "x/y"}, exitBadInput, []string{"testdata/none.json"}},
		{"a preemptor asking for no GPU", []string{"-f", fixture, "--preemptor", noGPU}, exitUnsupported, []string{"fall back to the stock DefaultPreemption", "asks for no GPU"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runTool(t, "", c.argv...)
			if code != c.code || out != "" {
				t.Fatalf("exit %d, want %d; stdout %q; stderr %s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
	// An object without a namespace is in "default", as kubectl apply would place it.
	noNamespace := `{"kind":"List","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"},"spec":null}]}`
	if code, _, errOut := runTool(t, noNamespace, "--pod", "x"); code != exitUnsupported || !strings.Contains(errOut, "pod default/x asks for no GPU") {
		t.Fatalf("a pod without namespace: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runTool(t, "", "-h"); code != exitPlan || !strings.Contains(errOut, "-preemptor") {
		t.Fatalf("-h: exit %d, usage %q", code, errOut)
	}
	if code, _, _ := runTool(t, "", "-f", "-", "--pod", "a/b"); code != exitBadInput {
		t.Fatalf("empty stdin: exit %d, want 2", code)
	}
}

// A PodDisruptionBudget that allows no disruption over the eval pods (the cheapest room): the
// plan avoids them, shows 0 violations proven fewest, and equals the plugin's.
func TestPDBProtectedVictimsAreAvoided(t *testing.T) {
	pdb := map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
		"metadata": map[string]any{"namespace": "batch", "name": "eval"},
		"spec":     map[string]any{"minAvailable": 2, "selector": map[string]any{"matchLabels": map[string]any{"app": "eval"}}},
		"status":   map[string]any{"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2}}
	augmented := fixtureWith(t, pdb)
	a := askJSON(t, augmented, "--pod", "research/finetune-0")
	p := planOf(t, a, "branch_and_bound")
	for _, v := range p.Victims {
		if strings.Contains(v.Name, "eval") {
			t.Fatalf("victims %v include a PDB-protected eval pod", victimPods(p))
		}
	}
	if p.PDB == nil || p.PDB.Violations != 0 || !p.PDB.Proven || p.PDB.Pass != "protected kept" || p.PDB.Protected != 2 || p.Cost <= 40 {
		t.Fatalf("plan cost %g, PDB %+v; want above 40 with 0 violations proven, 2 protected", p.Cost, p.PDB)
	}
	code, text, _ := runTool(t, augmented, "--config", config, "--now", fixedTime, "--pod", "research/finetune-0")
	if code != exitPlan || !strings.Contains(text, "PodDisruptionBudgets: 0 violation(s), no plan violates fewer (protected kept; 2 protected workload(s))") {
		t.Fatalf("text output lacks the PDB line:\n%s", text)
	}
	in, pods, _ := pluginView(t)
	in.PDBs = []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "eval"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "eval"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}}
	crossCheck(t, p, []*corev1.Pod{findPod(pods, "research", "finetune-0")}, nil, in)
}

// A pending pod of higher priority nominated to the cheapest room (gpu-r1-n0) asks for GPUs
// through DRA: it holds that node (as the plugin's model and Filter do), so the plan goes
// elsewhere, and equals the plugin's with the same nomination.
func TestNominatedPodHoldsItsRoom(t *testing.T) {
	nominee := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"namespace": "research", "name": "nominee", "uid": "uid-nominee"},
		"spec": map[string]any{"priority": 600, "containers": []any{map[string]any{"name": "c"}},
			"resourceClaims": []any{map[string]any{"name": "gpus", "resourceClaimName": "nominee-gpus"}}},
		"status": map[string]any{"phase": "Pending", "nominatedNodeName": "gpu-r1-n0"}}
	a := askJSON(t, fixtureWith(t, nominee), "--pod", "research/finetune-0", "--solver", "branch_and_bound")
	p := planOf(t, a, "branch_and_bound")
	if slices.Contains(p.Nodes, "gpu-r1-n0") || p.Cost <= 40 || !strings.Contains(a.Ineligible["gpu-r1-n0"], "nominee") {
		t.Fatalf("plan on %v cost %g, ineligible %v; want gpu-r1-n0 reserved for the nominee and a dearer room", p.Nodes, p.Cost, a.Ineligible)
	}
	in, pods, _ := pluginView(t)
	in.Nominated = []topopreempt.Nominee{{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "research", Name: "nominee", UID: "uid-nominee"},
		Spec: corev1.PodSpec{Priority: ptr.To[int32](600), ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To("nominee-gpus")}}}},
		Node: "gpu-r1-n0"}}
	crossCheck(t, p, []*corev1.Pod{findPod(pods, "research", "finetune-0")}, nil, in)
}

// fixtureWith is the fixture's List with more items, as JSON.
func fixtureWith(t *testing.T, items ...map[string]any) string {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	for _, item := range items {
		list["items"] = append(list["items"].([]any), item)
	}
	augmented, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return string(augmented)
}

// askJSON runs the tool on `input` (stdin) with the fixture's config and clock and --json.
func askJSON(t *testing.T, input string, argv ...string) *answer {
	t.Helper()
	code, out, errOut := runTool(t, input, append([]string{"--config", config, "--now", fixedTime, "--json"}, argv...)...)
	if code != exitPlan {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var a answer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	return &a
}
