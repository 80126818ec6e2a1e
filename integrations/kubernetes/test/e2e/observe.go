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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	Wasted   bool    `json:"wasted"` // none of its GPUs went to the preemptor
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
}

// Result is what one scheduler did in one scenario.
type Result struct {
	Scenario         string      `json:"scenario"`
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
	Schedulable      bool        `json:"schedulable"`
	Optimum          string      `json:"optimum"`
	OptimumCost      float64     `json:"optimum_cost"`
	OptimumVictims   int         `json:"optimum_victims"`
	PostFilter       []Timing    `json:"postfilter"`
	SchedulerLog     string      `json:"scheduler_log"`
}

func logf(format string, args ...any) {
	fmt.Printf("[k8s-scenarios %s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Run sets up s in a fresh namespace, starts v's scheduler, submits the preemptor and
// observes what happens; the scheduler is stopped and the state cleared before returning.
func Run(ctx context.Context, c *cluster.Cluster, s *Scenario, v Variant) (*Result, error) {
	client := c.Client
	ns := fmt.Sprintf("%s-%s", s.Name, v.Name)
	res := &Result{Scenario: s.Name, Title: s.Title, Scheduler: v.Name, Nodes: len(s.Nodes), FillPods: len(s.Fill),
		Schedulable: s.Schedulable, Optimum: s.Optimum, OptimumCost: s.OptimumCost, OptimumVictims: s.OptimumVictims}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	defer func() {
		c.StopScheduler()
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
	submitted := time.Now()
	if err := submitPreemptor(ctx, client, ns, s.Preemptor); err != nil {
		return nil, err
	}
	logf("%s: preemptor %s submitted (%d pod(s) x %d GPUs)", ns, s.Preemptor.Name, s.Preemptor.Pods, s.Preemptor.GPUsPerPod)
	deadline := submitted.Add(s.Watch)
	for time.Now().Before(deadline) {
		drain(fillWatch, preempted)
		if err := c.CheckAlive(); err != nil {
			return nil, err
		}
		if exited, err := schedulerExited(c); exited {
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
	samples, err := sched.ExtensionPointDurations("PostFilter", "PodGroupPostFilter")
	if err != nil {
		return nil, err
	}
	for _, sample := range samples {
		if sample.Count > 0 {
			res.PostFilter = append(res.PostFilter, Timing{ExtensionPoint: sample.Labels["extension_point"],
				Status: sample.Labels["status"], Count: int(sample.Count), SumSeconds: sample.Sum})
		}
	}
	sort.Slice(res.PostFilter, func(i, j int) bool {
		return res.PostFilter[i].ExtensionPoint+res.PostFilter[i].Status < res.PostFilter[j].ExtensionPoint+res.PostFilter[j].Status
	})
	return res, nil
}

func schedulerExited(c *cluster.Cluster) (bool, error) {
	s := c.Scheduler()
	if s == nil {
		return true, fmt.Errorf("no scheduler running")
	}
	return false, nil
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

func submitPreemptor(ctx context.Context, client kubernetes.Interface, ns string, p PreemptorSpec) error {
	group := ""
	if p.Group != nil {
		if _, err := client.SchedulingV1beta1().PodGroups(ns).Create(ctx, makePodGroup(ns, *p.Group), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("preemptor podgroup: %w", err)
		}
		group = p.Group.Name
	}
	for i := 0; i < p.Pods; i++ {
		name := preemptorPodName(p, i)
		claim := makeClaim(ns, name+"-gpus", p.GPUsPerPod, p.SameNUMA)
		if _, err := client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("preemptor claim: %w", err)
		}
		pod := makePod(ns, name, "preemptor", p.Priority, claim.Name, group, 0)
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("preemptor pod: %w", err)
		}
	}
	return nil
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
	nodeRack := map[string]string{}
	for _, n := range s.Nodes {
		nodeRack[n.Name] = n.Rack
	}
	used := map[gpuKey]bool{}
	for i := 0; i < s.Preemptor.Pods; i++ {
		name := preemptorPodName(s.Preemptor, i)
		pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pl := Placement{Pod: name, Node: pod.Spec.NodeName, Rack: nodeRack[pod.Spec.NodeName]}
		claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, name+"-gpus", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if claim.Status.Allocation != nil {
			for _, r := range claim.Status.Allocation.Devices.Results {
				gpu, err := strconv.Atoi(strings.TrimPrefix(r.Device, "gpu"))
				if err != nil {
					return fmt.Errorf("device %q: %w", r.Device, err)
				}
				pl.GPUs = append(pl.GPUs, gpu)
				used[gpuKey{r.Pool, gpu}] = true
			}
			sort.Ints(pl.GPUs)
		}
		res.Placements = append(res.Placements, pl)
	}
	res.TopologyHonoured, res.TopologyNote = topologyVerdict(s, res)

	// A fill pod that is still there without a DisruptionTarget was not preempted.
	for _, f := range s.Fill {
		if !preempted[f.Name] {
			pod, err := client.CoreV1().Pods(ns).Get(ctx, f.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				preempted[f.Name] = true
			case err != nil:
				return err
			case hasDisruptionTarget(pod) || pod.DeletionTimestamp != nil:
				preempted[f.Name] = true
			}
		}
		if !preempted[f.Name] {
			continue
		}
		v := Victim{Pod: f.Name, Node: f.Node, GPUs: f.GPUs, Priority: PriorityClasses[f.Priority], Cost: f.Cost, Wasted: true}
		for _, g := range f.GPUs {
			if used[gpuKey{f.Node, g}] {
				v.Wasted = false
			}
		}
		res.Victims = append(res.Victims, v)
		res.VictimCost += v.Cost
		if v.Wasted {
			res.WastedEvictions++
		}
	}
	return nil
}

// topologyVerdict: did every preemptor pod run with its requirement met?
func topologyVerdict(s *Scenario, res *Result) (bool, string) {
	if !res.PreemptorRan {
		return false, "preemptor did not run"
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
