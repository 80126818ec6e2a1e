// SPDX-License-Identifier: MIT

package main

import (
	"fmt"
	"io"
	"strings"

	topopreempt "github.com/topopreempt/topopreempt/integrations/kubernetes/plugin"
)

// answer is what the tool prints: the question as modelled, then one plan per solver.
type answer struct {
	Preemptor preemptorView `json:"preemptor"`
	Cluster   clusterView   `json:"cluster"`
	CostModel []string      `json:"costModel"`
	Warnings  []string      `json:"warnings,omitempty"`
	Plans     []planView    `json:"plans"`
}

type preemptorView struct {
	Kind         string   `json:"kind"` // Pod or PodGroup
	Name         string   `json:"name"` // namespace/name
	Pods         []string `json:"pods"`
	Priority     int32    `json:"priority"`
	GPUsPerPod   int32    `json:"gpusPerPod"`
	ReplicaScope string   `json:"replicaScope,omitempty"` // each pod's GPUs inside one numa or pcie
	GangScope    string   `json:"gangScope,omitempty"`    // all pods inside one of this level
}

type clusterView struct {
	Nodes            int      `json:"nodes"`
	Devices          int      `json:"devices"`
	RunningWorkloads int      `json:"runningWorkloads"` // pods (or whole PodGroups) holding GPUs
	Levels           []string `json:"levels"`
}

type planView struct {
	Solver      string       `json:"solver"`
	Error       string       `json:"error,omitempty"` // the solver could not answer (e.g. knapsack's preconditions)
	Status      string       `json:"status,omitempty"`
	Cost        float64      `json:"cost"`
	LowerBound  float64      `json:"lowerBound"`
	Target      string       `json:"target,omitempty"` // the domain the preemptor lands in
	Nodes       []string     `json:"nodes,omitempty"`  // by preemptor pod
	Devices     []deviceView `json:"devices,omitempty"`
	Victims     []victimView `json:"victims"`
	Explanation string       `json:"explanation,omitempty"`
	Seconds     float64      `json:"seconds"`
}

type deviceView struct {
	Pod    string `json:"pod"`
	Node   string `json:"node"`
	Device string `json:"device"` // numa/pcie/device below the node
}

type victimView struct {
	Kind      string   `json:"kind"` // Pod or PodGroup
	Name      string   `json:"name"` // namespace/name
	Pods      []string `json:"pods"` // namespace/name, all evicted
	Nodes     []string `json:"nodes"`
	Priority  int32    `json:"priority"`
	GPUs      int      `json:"gpus"`
	Cost      float64  `json:"cost"` // its share of the plan's cost
	Extra     float64  `json:"extraCost"`
	SinceCkpt float64  `json:"secondsSinceCheckpoint"`
	ModelGiB  float64  `json:"modelGiB"`
	ModelID   string   `json:"modelID,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

func newAnswer(args *topopreempt.Args, q *question, m *topopreempt.Model) *answer {
	a := &answer{Warnings: q.warnings, Plans: []planView{}}
	p := m.Preemptor
	a.Preemptor = preemptorView{Kind: "Pod", Name: q.pods[0].Namespace + "/" + q.pods[0].Name, Priority: p.Priority,
		GPUsPerPod: p.WholeDevices, ReplicaScope: p.ReplicaScope, GangScope: p.GangScope}
	if q.group != nil {
		a.Preemptor.Kind, a.Preemptor.Name = "PodGroup", q.group.Namespace+"/"+q.group.Name
	}
	for _, pod := range q.pods {
		a.Preemptor.Pods = append(a.Preemptor.Pods, pod.Namespace+"/"+pod.Name)
	}
	a.Cluster = clusterView{Nodes: len(q.in.Nodes), RunningWorkloads: len(m.Workloads), Levels: m.Levels}
	for _, d := range m.Domains {
		if d.Level == "device" {
			a.Cluster.Devices++
		}
	}
	for _, t := range args.Cost {
		s := t.Model
		if t.Weight != nil {
			s += fmt.Sprintf(" weight %g", *t.Weight)
		}
		if t.Floor != nil {
			s += fmt.Sprintf(" floor %g", *t.Floor)
		}
		a.CostModel = append(a.CostModel, s)
	}
	return a
}

// add records one solver's plan (or its error), resolving victim ids to the model's workloads.
func (a *answer) add(solver string, m *topopreempt.Model, plan *topopreempt.Plan, err error) {
	v := planView{Solver: solver, Victims: []victimView{}}
	if err != nil {
		v.Error = err.Error()
		a.Plans = append(a.Plans, v)
		return
	}
	v.Status, v.Cost, v.LowerBound, v.Target = plan.Status, plan.Cost, plan.LowerBound, plan.Target
	v.Explanation, v.Seconds, v.Nodes = plan.Explanation, plan.Seconds, plan.Hosts
	for _, d := range plan.Devices {
		v.Devices = append(v.Devices, deviceView{Pod: a.Preemptor.Pods[d.Replica], Node: d.Host, Device: d.Path})
	}
	byID := map[uint64]*topopreempt.Workload{}
	for i := range m.Workloads {
		byID[m.Workloads[i].ID] = &m.Workloads[i]
	}
	for i, id := range plan.Victims {
		w := byID[id]
		if w == nil {
			v.Error = fmt.Sprintf("the plan names unknown workload %d", id)
			break
		}
		vv := victimView{Kind: "Pod", Name: w.Name, Priority: w.Priority, GPUs: len(w.Entries), Cost: plan.VictimCosts[i],
			Extra: w.Extra, SinceCkpt: w.SinceCkpt, ModelGiB: w.ModelGiB, ModelID: w.ModelID, Reason: plan.VictimWhy[i]}
		if strings.HasPrefix(w.Key, "podgroup/") {
			vv.Kind, vv.Name = "PodGroup", strings.TrimPrefix(w.Key, "podgroup/")
		}
		seen := map[string]bool{}
		for _, p := range w.Pods {
			vv.Pods = append(vv.Pods, p.Namespace+"/"+p.Name)
			if !seen[p.Spec.NodeName] {
				seen[p.Spec.NodeName] = true
				vv.Nodes = append(vv.Nodes, p.Spec.NodeName)
			}
		}
		v.Victims = append(v.Victims, vv)
	}
	a.Plans = append(a.Plans, v)
}

func (a *answer) print(w io.Writer) {
	p := a.Preemptor
	fmt.Fprintf(w, "Preemptor: %s %s, priority %d, %d pod(s) x %d GPU(s)", p.Kind, p.Name, p.Priority, len(p.Pods), p.GPUsPerPod)
	if p.ReplicaScope != "" {
		fmt.Fprintf(w, ", each pod inside one %s", p.ReplicaScope)
	}
	if p.GangScope != "" {
		fmt.Fprintf(w, ", all pods inside one %s", p.GangScope)
	}
	fmt.Fprintf(w, "\nCluster: %d nodes, %d GPUs, %d running workloads holding GPUs; levels %s\n",
		a.Cluster.Nodes, a.Cluster.Devices, a.Cluster.RunningWorkloads, strings.Join(a.Cluster.Levels, " > "))
	fmt.Fprintf(w, "Cost model: %s\n", strings.Join(a.CostModel, " + "))
	for _, s := range a.Warnings {
		fmt.Fprintf(w, "Note: %s\n", s)
	}
	for _, v := range a.Plans {
		fmt.Fprintf(w, "\n== %s: ", v.Solver)
		if v.Error != "" {
			fmt.Fprintf(w, "no plan: %s\n", v.Error)
			continue
		}
		fmt.Fprintf(w, "%s, cost %g (lower bound %g), %.3f ms\n", v.Status, v.Cost, v.LowerBound, v.Seconds*1000)
		if v.Status == "no_preemption_needed" {
			// PostFilter runs only after the scheduler's filters refused every node, so the
			// plugin hands such a question to the stock DefaultPreemption (plugin.go).
			fmt.Fprintln(w, "The GPUs fit without preemption: if the pod is still pending, something the model does not see (CPU, memory, taints, affinity) blocks it, and the plugin would let the stock DefaultPreemption decide")
		}
		if v.Status == "unknown" {
			fmt.Fprintln(w, "A limit stopped the search before a plan or a proof: nothing is known, and the plugin would let the stock DefaultPreemption decide")
		}
		if v.Status != "infeasible" && v.Status != "unknown" {
			fmt.Fprintf(w, "Preemptor goes to %s (nodes %s)\n", v.Target, strings.Join(v.Nodes, ", "))
			for _, d := range v.Devices {
				fmt.Fprintf(w, "  %s: %s %s\n", d.Pod, d.Node, d.Device)
			}
		}
		fmt.Fprintf(w, "Victims (%d):\n", len(v.Victims))
		for _, x := range v.Victims {
			fmt.Fprintf(w, "  %s %s on %s: priority %d, %d GPU(s), cost %g (extra %g, %gs since checkpoint, model %g GiB",
				x.Kind, x.Name, strings.Join(x.Nodes, ","), x.Priority, x.GPUs, x.Cost, x.Extra, x.SinceCkpt, x.ModelGiB)
			if x.ModelID != "" {
				fmt.Fprintf(w, " %s", x.ModelID)
			}
			fmt.Fprintln(w, ")")
			if x.Kind == "PodGroup" {
				fmt.Fprintf(w, "    pods: %s\n", strings.Join(x.Pods, ", "))
			}
			if x.Reason != "" {
				fmt.Fprintf(w, "    why: %s\n", x.Reason)
			}
		}
		if v.Explanation != "" {
			fmt.Fprintf(w, "Explanation:\n  %s\n", strings.ReplaceAll(strings.TrimRight(v.Explanation, "\n"), "\n", "\n  "))
		}
	}
}
