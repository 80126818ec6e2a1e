// SPDX-License-Identifier: MIT

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/topopreempt/topopreempt/integrations/kubernetes/internal/cluster"
)

// Variant is one scheduler under test: a binary and its KubeSchedulerConfiguration.
type Variant struct{ Name, Binary, Config string }

// Victim is a fill pod the scheduler preempted.
type Victim struct {
	Pod      string  `json:"pod"`
	Node     string  `json:"node"`
	GPUs     []int   `json:"gpus"`
	Priority int32   `json:"priority"`
	Cost     float64 `json:"cost"`
	Wasted   bool    `json:"wasted"` // the preemptor could use nothing it freed (see observeAfter)
	// PDBViolation: a PDB of the scenario (none allows a disruption) selects it.
	PDBViolation bool `json:"pdb_violation,omitempty"`
}

// Placement is where one preemptor pod ran.
type Placement struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	Rack string `json:"rack"`
	GPUs []int  `json:"gpus"`
}

// Timing is one series of scheduler_framework_extension_point_duration_seconds.
type Timing struct {
	ExtensionPoint string  `json:"extension_point"`
	Status         string  `json:"status"`
	Count          int     `json:"count"`
	SumSeconds     float64 `json:"sum_seconds"`
	// P50Seconds, P90Seconds and P99Seconds are estimated from the histogram's buckets
	// (histogram_quantile).
	P50Seconds float64 `json:"p50_seconds"`
	P90Seconds float64 `json:"p90_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
}

// Result is what one scheduler did in one scenario.
type Result struct {
	Scenario         string      `json:"scenario"`
	Mode             GPUMode     `json:"gpu_mode"`
	SameNUMA         bool        `json:"same_numa"` // the preemptor needs its GPUs on one NUMA node
	Title            string      `json:"title"`
	Scheduler        string      `json:"scheduler"`
	Nodes            int         `json:"nodes"`
	FillPods         int         `json:"fill_pods"`
	SetupSeconds     float64     `json:"setup_seconds"`
	PreemptorRan     bool        `json:"preemptor_ran"`
	SecondsToRun     float64     `json:"seconds_to_run,omitempty"`
	Placements       []Placement `json:"placements"`
	TopologyHonoured bool        `json:"topology_honoured"`
	TopologyNote     string      `json:"topology_note"`
	Victims          []Victim    `json:"victims"`
	VictimCost       float64     `json:"victim_cost"`
	WastedEvictions  int         `json:"wasted_evictions"`
	// EvictedTwice counts the victims that received the Preempted event from more than one
	// preemptor (several preemptors planned the same room).
	EvictedTwice  int `json:"evicted_twice"`
	PDBViolations int `json:"pdb_violations"`
	// CrowdRan and Fallbacks are set for a crowd (Scenario.Crowd): how many of its preemptors
	// ran, and the TopoPreempt plugin's fallbacks to the stock preemption in the log.
	CrowdRan       int      `json:"crowd_ran,omitempty"`
	Fallbacks      int      `json:"fallbacks,omitempty"`
	Schedulable    bool     `json:"schedulable"`
	ReachOptimum   bool     `json:"reach_optimum,omitempty"`
	Optimum        string   `json:"optimum"`
	OptimumCost    float64  `json:"optimum_cost"`
	OptimumVictims int      `json:"optimum_victims"`
	PostFilter     []Timing `json:"postfilter"`
	SchedulerLog   string   `json:"scheduler_log"`
	// WhatIf is topopreempt-whatif's answer on a dump of the state (the -whatif variant, where
	// whatIfApplies), compared with what this scheduler evicted.
	WhatIf *WhatIf `json:"whatif,omitempty"`
	// Sequence is set when the scenario submits several preemptors one after another
	// (Scenario.Preemptors > 1): what happened to each, in order. The fields above then sum
	// (victims, cost, wasted) or combine (ran: any; topology: every one that ran) over them.
	Sequence []PreemptorOutcome `json:"sequence,omitempty"`
}

func logf(format string, args ...any) {
	fmt.Printf("[k8s-scenarios %s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Run sets up s in a fresh namespace, starts v's scheduler, submits the preemptor and
// observes what happens; the scheduler is stopped and the state cleared before returning
// (not cleared where s.OwnControlPlane: c is then the variant's own, stopped by the caller).
func Run(ctx context.Context, c *cluster.Cluster, s *Scenario, v Variant) (*Result, error) {
	client := c.Client
	ns := fmt.Sprintf("%s-%s-%s", s.Name, s.Mode, v.Name)
	res := &Result{Scenario: s.Name, Mode: s.Mode, SameNUMA: s.Preemptor.SameNUMA, Title: s.Title, Scheduler: v.Name, Nodes: len(s.Nodes), FillPods: len(s.Fill),
		Schedulable: s.Schedulable, ReachOptimum: s.ReachOptimum, Optimum: s.Optimum, OptimumCost: s.OptimumCost, OptimumVictims: s.OptimumVictims}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	defer func() {
		c.StopScheduler()
		if s.OwnControlPlane {
			return // the caller stops this control plane; nothing else will run on it
		}
		if err := clearState(context.Background(), client, ns); err != nil {
			logf("%s: clearing state: %v", ns, err)
		}
	}()
	start := time.Now()
	if err := applyState(ctx, client, ns, s); err != nil {
		return nil, err
	}
	wait := s.FillRunningWait
	if wait == 0 {
		wait = 2 * time.Minute
	}
	if err := waitFillRunning(ctx, client, ns, len(s.Fill), wait); err != nil {
		return nil, err
	}
	res.SetupSeconds = time.Since(start).Seconds()
	logf("%s: %d nodes, %d fill pods running after %.1fs", ns, len(s.Nodes), len(s.Fill), res.SetupSeconds)

	sched, err := c.StartScheduler(ctx, "kube-scheduler-"+ns, v.Binary, v.Config)
	if err != nil {
		return nil, err
	}
	res.SchedulerLog = sched.LogPath()
	time.Sleep(2 * time.Second) // informers list the fill; readyz does not wait for that

	fillWatch, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: RoleLabel + "=fill"})
	if err != nil {
		return nil, err
	}
	defer fillWatch.Stop()
	preempted := map[string]bool{}
	if len(s.Crowd) > 0 {
		return runCrowd(ctx, c, sched, s, res, ns, fillWatch, preempted)
	}
	if s.Preemptors > 1 {
		return runSequence(ctx, c, sched, s, res, ns, fillWatch, preempted)
	}
	if v.Name == *whatIfVariant {
		if why := whatIfApplies(s); why != "" {
			logf("%s: what-if not compared: %s", ns, why)
		} else if res.WhatIf, err = askWhatIf(ctx, c, s, ns, v); err != nil {
			return nil, err
		}
	}
	submitted := time.Now()
	if err := submitPreemptor(ctx, client, ns, s.Mode, s.Preemptor); err != nil {
		return nil, err
	}
	logf("%s: preemptor %s submitted (%d pod(s) x %d GPUs)", ns, s.Preemptor.Name, s.Preemptor.Pods, s.Preemptor.GPUsPerPod)
	deadline := submitted.Add(s.Watch)
	for time.Now().Before(deadline) {
		if err := pollAlive(c, fillWatch, preempted); err != nil {
			return nil, err
		}
		ran, err := preemptorRunning(ctx, client, ns, s.Preemptor)
		if err != nil {
			return nil, err
		}
		if ran && !res.PreemptorRan {
			res.PreemptorRan = true
			res.SecondsToRun = time.Since(submitted).Seconds()
			// Evictions that raced the binding still show up within a moment.
			deadline = time.Now().Add(2 * time.Second)
		}
		time.Sleep(200 * time.Millisecond)
	}
	drain(fillWatch, preempted)
	if err := observe(ctx, client, ns, s, res, preempted); err != nil {
		return nil, err
	}
	if res.WhatIf != nil {
		res.WhatIf.compare(res)
	}
	if res.EvictedTwice, err = evictedTwice(ctx, client, ns); err != nil {
		return nil, err
	}
	if s.Preemptor.Pods > 1 && s.Preemptor.Group == nil {
		logf("%s: %d preemptors together: ran=%v victims=%d cost=%g wasted=%d evicted for two preemptors=%d", ns, s.Preemptor.Pods,
			res.PreemptorRan, len(res.Victims), res.VictimCost, res.WastedEvictions, res.EvictedTwice)
	}
	if res.PostFilter, err = postFilterTimings(sched); err != nil {
		return nil, err
	}
	return res, nil
}

// postFilterTimings scrapes the scheduler's PostFilter and PodGroupPostFilter histograms.
func postFilterTimings(sched *cluster.Scheduler) ([]Timing, error) {
	samples, err := sched.ExtensionPointDurations("PostFilter", "PodGroupPostFilter")
	if err != nil {
		return nil, err
	}
	var out []Timing
	for _, sample := range samples {
		if sample.Count > 0 {
			out = append(out, Timing{ExtensionPoint: sample.Labels["extension_point"],
				Status: sample.Labels["status"], Count: int(sample.Count), SumSeconds: sample.Sum,
				P50Seconds: sample.Quantile(0.5), P90Seconds: sample.Quantile(0.9), P99Seconds: sample.Quantile(0.99)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].ExtensionPoint+out[i].Status < out[j].ExtensionPoint+out[j].Status
	})
	return out, nil
}

func schedulerExited(c *cluster.Cluster) (bool, error) {
	s := c.Scheduler()
	if s == nil {
		return true, fmt.Errorf("no scheduler running")
	}
	return false, nil
}

// pollAlive is one step of a wait for a preemptor: records the fill pods preempted so far and
// fails when the control plane or the scheduler has stopped.
func pollAlive(c *cluster.Cluster, fillWatch watch.Interface, preempted map[string]bool) error {
	drain(fillWatch, preempted)
	if err := c.CheckAlive(); err != nil {
		return err
	}
	if exited, err := schedulerExited(c); exited {
		return err
	}
	return nil
}

// drain records every fill pod deleted or marked DisruptionTarget so far.
func drain(w watch.Interface, preempted map[string]bool) {
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if ev.Type == watch.Deleted || hasDisruptionTarget(pod) || pod.DeletionTimestamp != nil {
				preempted[pod.Name] = true
			}
		default:
			return
		}
	}
}

func hasDisruptionTarget(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func preemptorPodName(p PreemptorSpec, i int) string { return fmt.Sprintf("%s-%d", p.Name, i) }

func submitPreemptor(ctx context.Context, client kubernetes.Interface, ns string, mode GPUMode, p PreemptorSpec) error {
	group, claims, pods := preemptorObjects(ns, mode, p)
	if group != nil {
		if _, err := client.SchedulingV1beta1().PodGroups(ns).Create(ctx, group, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("preemptor podgroup: %w", err)
		}
	}
	for i, pod := range pods {
		if mode == DRA {
			if _, err := client.ResourceV1().ResourceClaims(ns).Create(ctx, claims[i], metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("preemptor claim: %w", err)
			}
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("preemptor pod: %w", err)
		}
	}
	return nil
}

// preemptorObjects are the objects submitPreemptor creates: the preemptor's PodGroup (nil
// none), and its pods with (DRA) one ResourceClaim each, claims[i] pods[i]'s.
func preemptorObjects(ns string, mode GPUMode, p PreemptorSpec) (*schedulingv1beta1.PodGroup, []*resourcev1.ResourceClaim, []*corev1.Pod) {
	var group *schedulingv1beta1.PodGroup
	groupName := ""
	if p.Group != nil {
		group = makePodGroup(ns, *p.Group)
		groupName = p.Group.Name
	}
	var claims []*resourcev1.ResourceClaim
	var pods []*corev1.Pod
	for i := 0; i < p.Pods; i++ {
		name := preemptorPodName(p, i)
		var pod *corev1.Pod
		if mode == ExtendedResource {
			pod = makePod(ns, name, "preemptor", p.Priority, "", groupName, p.GPUsPerPod, 0, p.cpuOf())
		} else {
			claim := makeClaim(ns, name+"-gpus", p.GPUsPerPod, p.SameNUMA)
			claims = append(claims, claim)
			pod = makePod(ns, name, "preemptor", p.Priority, claim.Name, groupName, 0, 0, p.cpuOf())
		}
		pod.Spec.NodeSelector = p.NodeSelector
		if p.AvoidNode != "" {
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: HostLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{p.AvoidNode}}}}}}}}
		}
		if len(p.AvoidPodsLabelled) > 0 {
			if pod.Spec.Affinity == nil {
				pod.Spec.Affinity = &corev1.Affinity{}
			}
			pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.AvoidPodsLabelled}, TopologyKey: HostLabel}}}
		}
		pods = append(pods, pod)
	}
	return group, claims, pods
}

func preemptorRunning(ctx context.Context, client kubernetes.Interface, ns string, p PreemptorSpec) (bool, error) {
	for i := 0; i < p.Pods; i++ {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, preemptorPodName(p, i), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
			return false, nil
		}
	}
	return true, nil
}

type gpuKey struct {
	node string
	gpu  int
}

// observe fills in placements, topology, victims, cost and wasted evictions.
func observe(ctx context.Context, client kubernetes.Interface, ns string, s *Scenario, res *Result, preempted map[string]bool) error {
	return observeAfter(ctx, client, ns, s, res, preempted, map[string]bool{}, map[gpuKey]bool{})
}

// observeAfter is observe for one preemptor of a sequence: fill pods in counted are victims
// of earlier preemptors and not reported again (the new ones are added to it), and the GPUs in
// used went to earlier preemptors (this one's are added to it).
func observeAfter(ctx context.Context, client kubernetes.Interface, ns string, s *Scenario, res *Result, preempted, counted map[string]bool, used map[gpuKey]bool) error {
	// A fill pod that is still there without a DisruptionTarget was not preempted.
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: RoleLabel + "=fill"})
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		present[pod.Name] = true
		if hasDisruptionTarget(pod) || pod.DeletionTimestamp != nil {
			preempted[pod.Name] = true
		}
	}
	for _, f := range s.Fill {
		if !present[f.Name] {
			preempted[f.Name] = true
		}
	}
	nodeRack := map[string]string{}
	for _, n := range s.Nodes {
		nodeRack[n.Name] = n.Rack
	}
	for i := 0; i < s.Preemptor.Pods; i++ {
		name := preemptorPodName(s.Preemptor, i)
		pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pl := Placement{Pod: name, Node: pod.Spec.NodeName, Rack: nodeRack[pod.Spec.NodeName]}
		if s.Mode == ExtendedResource {
			if pl.Node != "" {
				pl.GPUs = bestDevices(s, preempted, used, pl.Node)
			}
		} else if pl.GPUs, err = allocatedGPUs(ctx, client, ns, name+"-gpus"); err != nil {
			return err
		}
		for _, g := range pl.GPUs {
			used[gpuKey{pl.Node, g}] = true
		}
		res.Placements = append(res.Placements, pl)
	}
	res.TopologyHonoured, res.TopologyNote = topologyVerdict(s, res)
	// CPU: what the preemptor pods that ran ask on each node, and what the fill pods left there
	// hold.
	preemptorCPU := map[string]int{}
	for _, pl := range res.Placements {
		if pl.Node != "" && res.PreemptorRan {
			preemptorCPU[pl.Node] += s.Preemptor.cpuOf()
		}
	}
	heldCPU := map[string]int{}
	for _, f := range s.Fill {
		if !preempted[f.Name] {
			heldCPU[f.Node] += f.cpuOf()
		}
	}
	first := len(res.Victims)
	for _, f := range s.Fill {
		if !preempted[f.Name] || counted[f.Name] {
			continue
		}
		counted[f.Name] = true
		// Wasted: the preemptor, running inside its requirement, could use nothing the victim
		// freed: none of its GPUs went to a preemptor, and (on a preemptor's node) the
		// preemptor's CPU would have fitted with the victim still there.
		v := Victim{Pod: f.Name, Node: f.Node, GPUs: f.GPUs, Priority: PriorityClasses[f.Priority], Cost: f.Cost, Wasted: true}
		for _, g := range f.GPUs {
			if used[gpuKey{f.Node, g}] && res.TopologyHonoured {
				v.Wasted = false
			}
		}
		if need := preemptorCPU[f.Node]; need > 0 && res.TopologyHonoured && NodeCPUMilli-heldCPU[f.Node]-f.cpuOf() < need {
			v.Wasted = false
		}
		for _, b := range s.PDBs {
			if matches(f, b.Selector) {
				v.PDBViolation = true
			}
		}
		res.Victims = append(res.Victims, v)
	}
	// A disruptionMode=All victim gang goes whole: its members are wasted only if all are (the
	// gang evicted whole as the cheapest way to free what the preemptor used is not waste).
	useful := map[string]bool{}
	groupOf := map[string]string{}
	disruptAll := map[string]bool{}
	for _, g := range s.FillGroups {
		disruptAll[g.Name] = g.DisruptAll
	}
	for _, f := range s.Fill {
		if disruptAll[f.Group] {
			groupOf[f.Name] = f.Group
		}
	}
	for _, v := range res.Victims[first:] {
		if g := groupOf[v.Pod]; g != "" && !v.Wasted {
			useful[g] = true
		}
	}
	for i := first; i < len(res.Victims); i++ {
		v := &res.Victims[i]
		if useful[groupOf[v.Pod]] {
			v.Wasted = false
		}
		res.VictimCost += v.Cost
		if v.Wasted {
			res.WastedEvictions++
		}
		if v.PDBViolation {
			res.PDBViolations++
		}
	}
	return nil
}

// allocatedGPUs reads the GPU indexes the scheduler allocated to a DRA claim.
func allocatedGPUs(ctx context.Context, client kubernetes.Interface, ns, claimName string) ([]int, error) {
	claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil || claim.Status.Allocation == nil {
		return nil, err
	}
	var gpus []int
	for _, r := range claim.Status.Allocation.Devices.Results {
		gpu, err := strconv.Atoi(strings.TrimPrefix(r.Device, "gpu"))
		if err != nil {
			return nil, fmt.Errorf("device %q: %w", r.Device, err)
		}
		gpus = append(gpus, gpu)
	}
	sort.Ints(gpus)
	return gpus, nil
}

// bestDevices is what the best possible device plugin and kubelet Topology Manager could
// give a preemptor pod bound to node by extended-resource count: after the evictions, the
// free GPUs of the NUMA node with the most of them first (the scheduler itself sees no NUMA).
func bestDevices(s *Scenario, preempted map[string]bool, taken map[gpuKey]bool, node string) []int {
	busy := map[int]bool{}
	for _, f := range s.Fill {
		if f.Node == node && !preempted[f.Name] {
			for _, g := range f.GPUs {
				busy[g] = true
			}
		}
	}
	freeByNUMA := map[int][]int{}
	for g := 0; g < GPUsPerNode; g++ {
		if !busy[g] && !taken[gpuKey{node, g}] {
			freeByNUMA[NUMAOf(g)] = append(freeByNUMA[NUMAOf(g)], g)
		}
	}
	var order []int
	for numa := 0; numa < GPUsPerNode/GPUsPerNUMA; numa++ {
		order = append(order, numa)
	}
	sort.SliceStable(order, func(i, j int) bool { return len(freeByNUMA[order[i]]) > len(freeByNUMA[order[j]]) })
	var gpus []int
	for _, numa := range order {
		gpus = append(gpus, freeByNUMA[numa]...)
	}
	if len(gpus) > s.Preemptor.GPUsPerPod {
		gpus = gpus[:s.Preemptor.GPUsPerPod]
	}
	sort.Ints(gpus)
	return gpus
}

// topologyVerdict: did every preemptor pod run with its requirement met?
func topologyVerdict(s *Scenario, res *Result) (bool, string) {
	if !res.PreemptorRan {
		return false, "preemptor did not run"
	}
	if s.Preemptor.SameNUMA && s.Mode == ExtendedResource {
		// The scheduler cannot see NUMA; the best device assignment on the chosen node decides.
		pl := res.Placements[0]
		if len(pl.GPUs) < s.Preemptor.GPUsPerPod || NUMAOf(pl.GPUs[0]) != NUMAOf(pl.GPUs[len(pl.GPUs)-1]) {
			return false, fmt.Sprintf("%s: no NUMA node has %d free GPUs after the evictions (best: %v); "+
				"a single-numa-node Topology Manager would reject the pod", pl.Node, s.Preemptor.GPUsPerPod, pl.GPUs)
		}
		return true, fmt.Sprintf("%s: GPUs %v free on NUMA %d after the evictions", pl.Node, pl.GPUs, NUMAOf(pl.GPUs[0]))
	}
	if s.Preemptor.SameNUMA {
		for _, pl := range res.Placements {
			if len(pl.GPUs) != s.Preemptor.GPUsPerPod {
				return false, fmt.Sprintf("%s got %d GPUs", pl.Pod, len(pl.GPUs))
			}
			for _, g := range pl.GPUs {
				if NUMAOf(g) != NUMAOf(pl.GPUs[0]) {
					return false, fmt.Sprintf("%s spans NUMA nodes: %v", pl.Pod, pl.GPUs)
				}
			}
		}
		return true, fmt.Sprintf("%s: GPUs %v on NUMA %d", res.Placements[0].Node, res.Placements[0].GPUs, NUMAOf(res.Placements[0].GPUs[0]))
	}
	if s.Preemptor.Group != nil && s.Preemptor.Group.TopologyKey == RackLabel {
		racks := map[string]bool{}
		var nodes []string
		for _, pl := range res.Placements {
			racks[pl.Rack] = true
			nodes = append(nodes, pl.Node)
		}
		if len(racks) != 1 {
			return false, fmt.Sprintf("gang spans racks: %v", nodes)
		}
		return true, fmt.Sprintf("gang on %s in %s", strings.Join(nodes, ", "), res.Placements[0].Rack)
	}
	return true, "no topology requirement"
}
