// SPDX-License-Identifier: MIT

// Package topopreempt is a kube-scheduler PostFilter (and PodGroupPostFilter) plugin that asks
// topopreempt, through its C ABI, which running pods to preempt so that a pending pod or gang
// can start on a topology-valid placement: whole GPUs from DRA ResourceSlices inside one NUMA
// node or PCIe root when the claim says so, a gang inside one rack when its PodGroup says so,
// at the least cost from pod annotations. Anything the model cannot express, and any error,
// falls back to the stock DefaultPreemption, with the reason logged. Its Filter keeps pods with
// ResourceClaims off nodes other preemptors are nominated to (reserve.go). See docs/kubernetes.md.
package topopreempt

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "TopoPreempt"

// CostTerm is one term of the cost: weight x model (names as in the C ABI: priority_weighted,
// victim_count, kubernetes_order, lost_work, reload_time, extra).
type CostTerm struct {
	Model  string   `json:"model"`
	Weight *float64 `json:"weight,omitempty"`
	Floor  *float64 `json:"floor,omitempty"`
}

// Args are the plugin's args (pluginConfig[].args).
type Args struct {
	// TopologyKeys are node label keys, widest first; kubernetes.io/hostname (the node) may
	// close the list. Default: zone, topology.topopreempt.dev/block, .../rack, hostname.
	TopologyKeys []string `json:"topologyKeys,omitempty"`
	// Drivers are the DRA drivers whose devices are GPUs; empty: every driver.
	Drivers []string `json:"drivers,omitempty"`
	// ExtendedResource is a device-plugin resource counted as whole GPUs (no NUMA detail) on
	// nodes that publish no ResourceSlice; "" turns that mode off.
	ExtendedResource string `json:"extendedResource,omitempty"`
	// Cost is the cost model; default: [{model: extra}] (the topopreempt.dev/cost annotation).
	Cost []CostTerm `json:"cost,omitempty"`
	// TimeLimitSeconds bounds branch and bound (0: the library's default).
	TimeLimitSeconds float64 `json:"timeLimitSeconds,omitempty"`
}

func (a *Args) driverWanted(d string) bool {
	if len(a.Drivers) == 0 {
		return true
	}
	for _, x := range a.Drivers {
		if x == d {
			return true
		}
	}
	return false
}

// usesLostWork says whether a cost term prices the seconds since the last checkpoint.
func (a *Args) usesLostWork() bool {
	for _, t := range a.Cost {
		if t.Model == "lost_work" {
			return true
		}
	}
	return false
}

// Validate checks the args as New does (the what-if tool checks a config file's args the same way).
func (a *Args) Validate() error {
	if len(a.TopologyKeys) == 0 {
		return fmt.Errorf("%s args: topologyKeys is empty", Name)
	}
	for i, t := range a.Cost {
		if _, ok := costModels[t.Model]; !ok {
			return fmt.Errorf("%s args: cost[%d].model %q is not one of priority_weighted, victim_count, kubernetes_order, lost_work, reload_time, extra", Name, i, t.Model)
		}
	}
	return nil
}

// DefaultArgs are the args when none are given.
func DefaultArgs() Args {
	return Args{
		TopologyKeys: []string{corev1.LabelTopologyZone, "topology.topopreempt.dev/block",
			"topology.topopreempt.dev/rack", corev1.LabelHostname},
		Cost: []CostTerm{{Model: "extra"}},
	}
}

// Plugin is the TopoPreempt plugin. It keeps the stock DefaultPreemption for fallback.
type Plugin struct {
	fh       fwk.Handle
	args     Args
	stock    *defaultpreemption.DefaultPreemption
	executor *preemption.Executor
	fts      plfeature.Features
	// pdbs lists the PodDisruptionBudgets (registered in New, before the informers start, as
	// DefaultPreemption registers its own); nil without an informer factory.
	pdbs policylisters.PodDisruptionBudgetLister
	// mirrors are the persistent C-ABI clusters, one per GPU kind: DRA devices (false) and the
	// extended resource (true). See mirror.go.
	mirrors map[bool]*mirror
	// inFlight holds the nominations of the preemptors whose evictions are still running
	// (asynchronously, see evict), by the preemptor's (pod's or PodGroup's) UID.
	inFlightMu sync.Mutex
	inFlight   map[types.UID]nomination
	// evictedFor maps each pod the plugin evicted to the UID of its preemptor, while the pod is
	// in the scheduler's snapshot (pruned in inputs): a terminating victim is gone already for
	// that preemptor only (see reserve.go).
	evictedFor map[types.UID]types.UID
}

// nomination is where an in-flight preemption sends the preemptor: one node for a pod, one
// per pod for a gang; nominees are its pods with their nodes and planned devices, whose rooms
// other preemptors' questions reserve.
type nomination struct {
	node     string
	gang     map[types.NamespacedName]*fwk.NominatingInfo
	nominees []Nominee
}

var _ fwk.PostFilterPlugin = &Plugin{}
var _ fwk.FilterPlugin = &Plugin{}
var _ fwk.PodGroupPostFilterPlugin = &Plugin{}

// New makes the plugin from its args (decoded from the profile's pluginConfig).
func New(ctx context.Context, obj runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	args := DefaultArgs()
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
			return nil, fmt.Errorf("%s args: %w", Name, err)
		}
	}
	if err := args.Validate(); err != nil {
		return nil, err
	}
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	stock, err := defaultpreemption.New(ctx, &config.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}, fh, fts)
	if err != nil {
		return nil, fmt.Errorf("%s: the fallback DefaultPreemption: %w", Name, err)
	}
	pl := &Plugin{fh: fh, args: args, stock: stock, executor: preemption.NewExecutor(fh, fts), fts: fts,
		mirrors: map[bool]*mirror{false: newMirror(false), true: newMirror(true)}, inFlight: map[types.UID]nomination{},
		evictedFor: map[types.UID]types.UID{}}
	if f := fh.SharedInformerFactory(); f != nil {
		pl.pdbs = f.Policy().V1().PodDisruptionBudgets().Lister()
	}
	pl.keepWarm(ctx)
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// inputs reads the scheduler's snapshot: nodes with their pods, DRA slices and claims.
func (pl *Plugin) inputs() (*Inputs, error) {
	nodeInfos, err := pl.fh.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, err
	}
	in := &Inputs{Pods: map[string][]*corev1.Pod{}, Now: time.Now(),
		TolerationComparisonOperators: pl.fts.EnableTaintTolerationComparisonOperators}
	present := map[types.UID]bool{}
	for _, ni := range nodeInfos {
		n := ni.Node()
		if n == nil {
			continue
		}
		in.Nodes = append(in.Nodes, n)
		for _, pi := range ni.GetPods() {
			in.Pods[n.Name] = append(in.Pods[n.Name], pi.GetPod())
			present[pi.GetPod().UID] = true
		}
	}
	in.Nominated, in.EvictedFor = pl.ownNominations(present)
	for _, n := range in.Nodes {
		// The scheduler's nominator: what stock's RunFilterPluginsWithNominatedPods adds.
		for _, pi := range pl.fh.NominatedPodsForNode(n.Name) {
			in.Nominated = append(in.Nominated, Nominee{Pod: pi.GetPod(), Node: n.Name})
		}
	}
	if dra := pl.fh.SharedDRAManager(); dra != nil {
		if in.Slices, err = dra.ResourceSlices().ListWithDeviceTaintRules(); err != nil {
			return nil, err
		}
		if in.Claims, err = dra.ResourceClaims().List(); err != nil {
			return nil, err
		}
		// List has the allocations written or assumed after the API call, not those made in
		// Reserve and still being written: a pod bound meanwhile holds those (see nodeHeld).
		in.PendingAllocation = dra.ResourceClaims().GetPendingAllocation
	}
	if pl.pdbs != nil {
		if in.PDBs, err = pl.pdbs.List(labels.Everything()); err != nil {
			return nil, err
		}
	}
	lister := pl.fh.SnapshotSharedLister().PodGroups()
	in.PodGroup = func(ns, name string) *schedulingv1beta1.PodGroup {
		if lister == nil {
			return nil
		}
		g, err := lister.Get(ns, name)
		if err != nil {
			return nil
		}
		return g
	}
	return in, nil
}

// decide syncs the mirror of the preemptor's GPU kind with the snapshot and solves; any
// panic is an error (recovered here too, since model building walks API objects).
// refused are the nodes the scheduler's filters refused a preemptor for a reason no eviction
// changes, from PostFilter's statuses: DefaultPreemption takes only Unschedulable nodes as
// candidates; UnschedulableAndUnresolvable is final, except from DynamicResources, which runs
// after every other filter of the default profile (so the node passed them) and calls a
// node unresolvable whenever its free devices do not fit, since it never counts victims'
// devices as freed: whether they fit after evictions is the device model's question.
func refused(nodes []*corev1.Node, m fwk.NodeToStatusReader) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for _, n := range nodes {
		st := m.Get(n.Name)
		switch {
		case st.Code() == fwk.Unschedulable:
		case st.Code() == fwk.UnschedulableAndUnresolvable && st.Plugin() == dynamicResources:
		default:
			out[n.Name] = fmt.Sprintf("%s %s: %s", st.Plugin(), st.Code(), st.Message())
		}
	}
	return out
}

const dynamicResources = "DynamicResources"

// decide syncs the mirror of the preemptor's GPU kind with the snapshot and solves; any
// panic is an error (recovered here too, since model building walks API objects). statuses
// are PostFilter's per-node verdicts (nil for a gang).
func (pl *Plugin) decide(pods []*corev1.Pod, group *schedulingv1beta1.PodGroup, statuses fwk.NodeToStatusReader) (d *decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("recovered: %v", r)
		}
	}()
	in, err := pl.inputs()
	if err != nil {
		return nil, err
	}
	in.Refused = refused(in.Nodes, statuses)
	others, err := pl.pendingTogether(in, pods, group)
	if err != nil {
		return nil, err
	}
	return pl.mirrors[wantsExtended(&pl.args, pods[0])].decideWith(&pl.args, in, pods, group, others)
}

// planUsable says why a decision may not be acted on ("" if it may): a status that proves
// nothing (the library's "unknown", or any status this build does not know), or a PDB count
// not proven fewest.
func planUsable(d *decision) string {
	switch d.plan.Status {
	case "optimal", "feasible", "infeasible", "no_preemption_needed":
	default:
		return "the plan's status is " + d.plan.Status + ": nothing proven"
	}
	if !d.pdb.Proven {
		return "PodDisruptionBudgets: " + d.pdb.String()
	}
	return ""
}

// simulateGang checks a gang's plan before any eviction, as the stock workload-aware
// preemption does: the victims removed from the scheduler's snapshot (a mutation session,
// undone after), then the PodGroup scheduling algorithm run for the gang. With DRA the
// victims' ResourceClaims are released too for the run (see releaseClaims): the algorithm's
// DynamicResources allocates from the DRA manager's claims, not from the snapshot's pods, so
// without it every plan would be refused.
func (pl *Plugin) simulateGang(ctx context.Context, pod *corev1.Pod, victims []*Workload, fn fwk.PodGroupSchedulingFunc) (err error) {
	if fn == nil {
		return nil
	}
	mutable := pl.fh.MutableSnapshotSharedLister()
	if mutable == nil {
		return nil
	}
	if err := mutable.StartMutations(); err != nil {
		return fmt.Errorf("the gang simulation: %w", err)
	}
	defer func() {
		if end := mutable.EndMutations(); end != nil && err == nil {
			err = fmt.Errorf("the gang simulation: %w", end)
		}
	}()
	logger := klog.FromContext(ctx)
	for _, w := range victims {
		for _, v := range w.Pods {
			if err := mutable.RemovePod(logger, v, v.Spec.NodeName); err != nil {
				return fmt.Errorf("the gang simulation: removing victim %s/%s: %w", v.Namespace, v.Name, err)
			}
		}
	}
	if !wantsExtended(&pl.args, pod) {
		restore, err := releaseClaims(logger, pl.fh.SharedDRAManager(), victims)
		if err != nil {
			return fmt.Errorf("the gang simulation: %w", err)
		}
		defer restore()
	}
	if _, st := fn(ctx); !st.IsSuccess() {
		return fmt.Errorf("the gang simulation refuses the plan: %s %s: %s", st.Plugin(), st.Code(), st.Message())
	}
	return nil
}

// releaseClaims makes the DRA manager see every allocated ResourceClaim of the victims as
// deallocated (its allocation and reservations gone, as the resourceclaim controller leaves it
// once the pod is gone), by assuming such a copy in its claim cache, as DynamicResources
// assumes a claim it has just written; restore assumes again the object that was there, so
// that the cache holds exactly what it held (or, if the informer brought a newer version
// meanwhile, that one, which Assume does not overwrite). Assuming moves the allocated-devices
// tracker at once (its handlers run before Assume returns). Its other effect: the scheduler's
// queue sees the claims change twice, which may retry pods waiting for devices once more.
func releaseClaims(logger klog.Logger, dra fwk.SharedDRAManager, victims []*Workload) (restore func(), err error) {
	var kept []*resourcev1.ResourceClaim
	restore = func() {
		for _, c := range kept {
			if err := dra.ResourceClaims().AssumeClaimAfterAPICall(c); err != nil {
				logger.V(4).Info("topopreempt: a newer version of a released claim arrived during the gang simulation", "claim", klog.KObj(c), "err", err)
			}
		}
	}
	if dra == nil {
		return restore, nil
	}
	for _, w := range victims {
		for _, c := range w.Claims {
			cur, err := dra.ResourceClaims().Get(c.Namespace, c.Name)
			if err != nil || cur.UID != c.UID || cur.Status.Allocation == nil {
				continue // gone or deallocated already: nothing to release
			}
			released := cur.DeepCopy()
			released.Status.Allocation = nil
			released.Status.ReservedFor = nil
			if err := dra.ResourceClaims().AssumeClaimAfterAPICall(released); err != nil {
				restore()
				return nil, fmt.Errorf("releasing victim claim %s/%s: %w", c.Namespace, c.Name, err)
			}
			kept = append(kept, cur)
		}
	}
	return restore, nil
}

// simulate checks the plan on the scheduler's own view before any eviction, as
// DefaultPreemption's SelectVictimsOnNode does: the victims removed from a copy of the node's
// NodeInfo (and, through the PreFilter extensions, from the cycle state, also for gang
// victims on other nodes), then the preemptor's filters run with the other pods' nominations.
// With DRA, DynamicResources' refusal is accepted: it runs last and never frees the victims'
// devices, whose fit the device model decides exactly. A refusal names the plugin and reason.
func (pl *Plugin) simulate(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string, victims []*Workload) error {
	lister := pl.fh.SnapshotSharedLister().NodeInfos()
	original, err := lister.Get(node)
	if err != nil {
		return err
	}
	nodeInfo := original.Snapshot()
	st := state.Clone()
	logger := klog.FromContext(ctx)
	for _, w := range victims {
		for _, v := range w.Pods {
			vi, err := lister.Get(v.Spec.NodeName)
			if err != nil {
				return fmt.Errorf("victim %s/%s: %w", v.Namespace, v.Name, err)
			}
			var info fwk.PodInfo
			for _, p := range vi.GetPods() {
				if p.GetPod().UID == v.UID {
					info = p
				}
			}
			if info == nil {
				return fmt.Errorf("victim %s/%s is not on %s in the scheduler's snapshot", v.Namespace, v.Name, v.Spec.NodeName)
			}
			target := vi
			if v.Spec.NodeName == node {
				if err := nodeInfo.RemovePod(logger, v); err != nil {
					return err
				}
				target = nodeInfo
			}
			if s := pl.fh.RunPreFilterExtensionRemovePod(ctx, st, pod, info, target); !s.IsSuccess() {
				return fmt.Errorf("%s: removing victim %s/%s: %s", s.Plugin(), v.Namespace, v.Name, s.Message())
			}
		}
	}
	s := pl.fh.RunFilterPluginsWithNominatedPods(ctx, st, pod, nodeInfo)
	if s.IsSuccess() || (s.Code() == fwk.UnschedulableAndUnresolvable && s.Plugin() == dynamicResources && !wantsExtended(&pl.args, pod)) {
		return nil
	}
	return fmt.Errorf("the simulation on %s refuses the plan: %s %s: %s", node, s.Plugin(), s.Code(), s.Message())
}

// Filter keeps a pod that asks for DRA devices off a node another pending pod of at least its
// priority is nominated to (see reservedAgainst): the scheduler's own filters would give it
// the room that preemption is freeing for the nominee. Enabled in the profile's filter list.
func (pl *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil || len(pod.Spec.ResourceClaims) == 0 || wantsExtended(&pl.args, pod) {
		return nil
	}
	var nominees []*corev1.Pod
	for _, pi := range pl.fh.NominatedPodsForNode(node.Name) {
		nominees = append(nominees, pi.GetPod())
	}
	if why := reservedAgainst(pod, nominees); why != "" {
		return fwk.NewStatus(fwk.Unschedulable, "topopreempt: "+why)
	}
	return nil
}

// PostFilter decides the victims for one pod; falls back to DefaultPreemption when it cannot.
func (pl *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible (preemptionPolicy Never)")
	}
	if n, ok := pl.inFlightFor(pod.UID); ok {
		// Its victims are still being evicted: evict nobody more and keep the nomination.
		return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: n.node, NominatingMode: fwk.ModeOverride}},
			fwk.NewStatus(fwk.Unschedulable, "topopreempt: waiting for the preemption for this pod to finish")
	}
	started := time.Now()
	d, err := pl.decide([]*corev1.Pod{pod}, nil, m)
	if err == nil {
		if why := planUsable(d); why != "" {
			err = errors.New(why)
		}
	}
	if err != nil {
		logger.Info("topopreempt: falling back to DefaultPreemption", "pod", klog.KObj(pod), "reason", err.Error())
		return pl.stock.PostFilter(ctx, state, pod, m)
	}
	plan := d.plan
	switch plan.Status {
	case "infeasible":
		logger.V(2).Info("topopreempt: no placement even after evicting every eligible victim", "pod", klog.KObj(pod))
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "topopreempt: no topology-valid placement even after preemption")
	case "no_preemption_needed":
		// The scheduler's filters refused a placement the device model accepts: something the
		// model does not see (CPU, memory, taints, affinity) blocks it. Let stock decide.
		logger.Info("topopreempt: falling back to DefaultPreemption", "pod", klog.KObj(pod), "reason", "fits without preemption in the device model: "+plan.Target)
		return pl.stock.PostFilter(ctx, state, pod, m)
	}
	node := plan.Hosts[0]
	if node == "" {
		logger.Info("topopreempt: falling back to DefaultPreemption", "pod", klog.KObj(pod), "reason", "the plan places the pod on no host")
		return pl.stock.PostFilter(ctx, state, pod, m)
	}
	if err := pl.simulate(ctx, state, pod, node, d.victims); err != nil {
		logger.Info("topopreempt: falling back to DefaultPreemption", "pod", klog.KObj(pod), "reason", err.Error())
		return pl.stock.PostFilter(ctx, state, pod, m)
	}
	pl.evict(ctx, d, node, &preemptor{pod: pod, pods: map[string]*corev1.Pod{pod.Name: pod}},
		nomination{node: node, nominees: nominees([]*corev1.Pod{pod}, plan)})
	logger.Info("topopreempt: preempting", "pod", klog.KObj(pod), "node", node, "victims", len(plan.Victims), "cost", plan.Cost, "status", plan.Status,
		"pdb", d.pdb.String(), "ineligibleNodes", len(d.ineligible),
		"reserved", d.reserved, "together", d.together.String(), "decided", time.Since(started), "solve", time.Duration(plan.Seconds*float64(time.Second)), "synced", d.synced)
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}}, fwk.NewStatus(fwk.Success)
}

// PodGroupPostFilter decides the victims for a gang; falls back to the stock workload-aware
// preemption when it cannot.
func (pl *Plugin) PodGroupPostFilter(ctx context.Context, state fwk.PodGroupCycleState, pgInfo fwk.PodGroupInfo, fn fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	group := pgInfo.GetPodGroup()
	pods := pgInfo.GetUnscheduledPods()
	if group == nil || len(pods) == 0 {
		logger.Info("topopreempt: falling back to stock PodGroupPostFilter", "group", pgInfo.GetKey(), "reason", "not a plain PodGroup with pending pods")
		return pl.stock.PodGroupPostFilter(ctx, state, pgInfo, fn)
	}
	if n, ok := pl.inFlightFor(group.UID); ok {
		return &fwk.PodGroupPostFilterResult{NominatingInfos: n.gang},
			fwk.NewStatus(fwk.Unschedulable, "topopreempt: waiting for the preemption for this pod group to finish")
	}
	d, err := pl.decide(pods, group, nil)
	if err == nil && d.plan.Status == "no_preemption_needed" {
		err = errors.New("fits without preemption in the device model")
	}
	if err == nil {
		if why := planUsable(d); why != "" {
			err = errors.New(why)
		}
	}
	if err != nil {
		logger.Info("topopreempt: falling back to stock PodGroupPostFilter", "group", pgInfo.GetKey(), "reason", err.Error())
		return pl.stock.PodGroupPostFilter(ctx, state, pgInfo, fn)
	}
	plan := d.plan
	if plan.Status == "infeasible" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "topopreempt: no topology-valid placement for the gang even after preemption")
	}
	if err := pl.simulateGang(ctx, pods[0], d.victims, fn); err != nil {
		logger.Info("topopreempt: falling back to stock PodGroupPostFilter", "group", pgInfo.GetKey(), "reason", err.Error())
		return pl.stock.PodGroupPostFilter(ctx, state, pgInfo, fn)
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	result := &fwk.PodGroupPostFilterResult{NominatingInfos: map[types.NamespacedName]*fwk.NominatingInfo{}}
	for i, p := range pods {
		result.NominatingInfos[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] =
			&fwk.NominatingInfo{NominatedNodeName: plan.Hosts[i], NominatingMode: fwk.ModeOverride}
	}
	pl.evict(ctx, d, strings.Join(uniq(plan.Hosts), ","), &preemptor{pod: pods[0], group: group, pods: byName},
		nomination{gang: result.NominatingInfos, nominees: nominees(pods, plan)})
	logger.Info("topopreempt: preempting for gang", "group", pgInfo.GetKey(), "nodes", plan.Hosts, "victims", len(plan.Victims), "cost", plan.Cost, "status", plan.Status,
		"together", d.together.String())
	return result, fwk.NewStatus(fwk.Success)
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// evict evicts exactly the plan's victims, every pod of each, through the stock executor's
// PreemptPod (the DisruptionTarget condition, then the API delete or a waiting pod's in-memory
// preemption, and the Preempted event), asynchronously, as DefaultPreemption does with
// SchedulerAsyncPreemption: the API calls run in a goroutine once PostFilter has returned the
// nomination, so they are not part of PostFilter's time. Until the victims are gone from the
// scheduler's informer (and, for DRA, their claims deallocated), the preemptor is in flight:
// PostFilter evicts nobody more for it and keeps its nomination. Then it is activated. A
// failed eviction is logged and ends the wait at once (the preemptor retries).
func (pl *Plugin) evict(ctx context.Context, d *decision, where string, p *preemptor, n nomination) {
	var victims []*corev1.Pod
	var claims []*resourcev1.ResourceClaim
	for _, w := range d.victims {
		victims = append(victims, w.Pods...)
		claims = append(claims, w.Claims...)
	}
	logger := klog.FromContext(ctx)
	uid := p.UID()
	pl.inFlightMu.Lock()
	pl.inFlight[uid] = n
	for _, v := range victims {
		pl.evictedFor[v.UID] = uid
	}
	pl.inFlightMu.Unlock()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				logger.Error(nil, "topopreempt: recovered in the eviction goroutine", "panic", r)
			}
			pl.inFlightMu.Lock()
			delete(pl.inFlight, uid)
			pl.inFlightMu.Unlock()
			pl.fh.Activate(logger, p.pods)
		}()
		// Not the cycle's context: the evictions outlive the scheduling cycle.
		ectx, cancel := context.WithTimeout(context.Background(), activateWait)
		defer cancel()
		c := &candidate{name: where, victims: &extenderv1.Victims{Pods: victims}}
		var deleted []*corev1.Pod // through the API (a waiting pod is preempted in memory and stays)
		for _, v := range victims {
			if v.DeletionTimestamp != nil {
				deleted = append(deleted, v)
				continue // already terminating: another call is unnecessary (as DefaultPreemption)
			}
			inMemory, err := pl.executor.PreemptPod(ectx, c, p, v, Name)
			if err != nil {
				logger.Error(err, "topopreempt: eviction failed; the preemptor will retry", "victim", klog.KObj(v), "preemptor", klog.KObj(p.pod))
				return
			}
			if !inMemory {
				deleted = append(deleted, v)
			}
		}
		pl.waitGone(ectx, deleted, claims)
	}()
}

// pendingTogether are the other preemptors pending beside this one (together.go), from the
// scheduler's pod informer; none without one.
func (pl *Plugin) pendingTogether(in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) ([]PendingPreemptor, error) {
	f := pl.fh.SharedInformerFactory()
	if f == nil {
		return nil, nil
	}
	all, err := f.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pl.inFlightMu.Lock()
	inFlight := make(map[types.UID]bool, len(pl.inFlight))
	for uid := range pl.inFlight {
		inFlight[uid] = true
	}
	pl.inFlightMu.Unlock()
	return PendingPreemptors(&pl.args, in, all, pods, group, inFlight), nil
}

// ownNominations are the nominees of the preemptions in flight (by preemptor UID, for a
// deterministic order), and a copy of evictedFor, after dropping the victims no longer in the
// snapshot (`present`).
func (pl *Plugin) ownNominations(present map[types.UID]bool) ([]Nominee, map[types.UID]types.UID) {
	pl.inFlightMu.Lock()
	defer pl.inFlightMu.Unlock()
	uids := make([]string, 0, len(pl.inFlight))
	for uid := range pl.inFlight {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	var nominees []Nominee
	for _, uid := range uids {
		nominees = append(nominees, pl.inFlight[types.UID(uid)].nominees...)
	}
	evictedFor := make(map[types.UID]types.UID, len(pl.evictedFor))
	for v, p := range pl.evictedFor {
		if !present[v] {
			delete(pl.evictedFor, v)
			continue
		}
		evictedFor[v] = p
	}
	return nominees, evictedFor
}

// nominees are the preemptor's pods with the nodes and devices of the plan (replica i is
// pods[i]).
func nominees(pods []*corev1.Pod, plan *Plan) []Nominee {
	out := make([]Nominee, len(pods))
	for i, p := range pods {
		out[i] = Nominee{Pod: p, Node: plan.Hosts[i]}
	}
	for _, e := range plan.Devices {
		if r := int(e.Replica); r < len(out) && e.Host == out[r].Node {
			out[r].Devices = append(out[r].Devices, e.Path)
		}
	}
	return out
}

// inFlightFor is the nomination of a preemptor whose evictions are still running.
func (pl *Plugin) inFlightFor(uid types.UID) (nomination, bool) {
	pl.inFlightMu.Lock()
	defer pl.inFlightMu.Unlock()
	n, ok := pl.inFlight[uid]
	return n, ok
}

// waitGone waits (polling, bounded by ctx) until no victim is in the scheduler's pod informer
// any more and every victim claim is deallocated. DynamicResources requeues a pod on a claim's
// deallocation event, but that event can arrive while the preemptor is still in a scheduling
// cycle and is then not replayed for it; the activation after this wait covers that.
func (pl *Plugin) waitGone(ctx context.Context, victims []*corev1.Pod, claims []*resourcev1.ResourceClaim) {
	pods := pl.fh.SharedInformerFactory().Core().V1().Pods().Lister()
	for {
		gone := true
		for _, v := range victims {
			if cur, err := pods.Pods(v.Namespace).Get(v.Name); err == nil && cur.UID == v.UID {
				gone = false
				break
			}
		}
		for _, c := range claims {
			if !gone {
				break
			}
			cur, err := pl.fh.SharedDRAManager().ResourceClaims().Get(c.Namespace, c.Name)
			if err == nil && cur.UID == c.UID && cur.Status.Allocation != nil {
				gone = false
			}
		}
		if gone {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(activatePoll):
		}
	}
}

// How long and how often the eviction goroutine watches its victims leave.
const (
	activateWait = 60 * time.Second
	activatePoll = 100 * time.Millisecond
)

// candidate is the executor's view of where the preemptor goes and whom it evicts.
type candidate struct {
	name    string
	victims *extenderv1.Victims
}

func (c *candidate) Victims() *extenderv1.Victims { return c.victims }
func (c *candidate) Name() string                 { return c.name }
func (c *candidate) NumPodGroupDisruptions() int  { return 0 }

// preemptor is the executor's view of the preemptor: a pod or a PodGroup.
type preemptor struct {
	pod   *corev1.Pod
	group *schedulingv1beta1.PodGroup
	pods  map[string]*corev1.Pod
}

func (p *preemptor) GetName() string {
	if p.group != nil {
		return p.group.Name
	}
	return p.pod.Name
}
func (p *preemptor) GetNamespace() string { return p.pod.Namespace }
func (p *preemptor) UID() types.UID {
	if p.group != nil {
		return p.group.UID
	}
	return p.pod.UID
}
func (p *preemptor) SchedulerName() string { return p.pod.Spec.SchedulerName }
func (p *preemptor) Obj() runtime.Object {
	if p.group != nil {
		return p.group
	}
	return p.pod
}
func (p *preemptor) Pods() map[string]*corev1.Pod { return p.pods }
func (p *preemptor) Priority() int32              { return podPriority(p.pod) }
func (p *preemptor) Type() string {
	if p.group != nil {
		return "PodGroup"
	}
	return "Pod"
}
