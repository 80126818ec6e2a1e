// SPDX-License-Identifier: MIT

package topopreempt

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Standard DRA device attributes that place a device inside its node.
const (
	NUMAAttribute     = "resource.kubernetes.io/numaNode"
	PCIeRootAttribute = "resource.kubernetes.io/pcieRoot"
)

// Pod annotations read as cost inputs (docs/kubernetes.md, "Cost inputs").
const (
	// CostAnnotation is a plain price for evicting the pod (the cost model "extra").
	CostAnnotation = "topopreempt.dev/cost"
	// LastCheckpointAnnotation is the RFC 3339 time of the pod's last checkpoint (lost_work).
	LastCheckpointAnnotation = "topopreempt.dev/last-checkpoint"
	// ModelSizeAnnotation is the GiB of model weights the pod holds in GPU memory (reload_time).
	ModelSizeAnnotation = "topopreempt.dev/model-size-gib"
	// ModelIDAnnotation names that model (pods sharing a model are priced once by reload_time).
	ModelIDAnnotation = "topopreempt.dev/model-id"
)

// Fixed level names below the label levels: the host, then the device tree from DRA.
const (
	levelCluster = "cluster"
	levelNode    = "node"
	levelNUMA    = "numa"
	levelPCIe    = "pcie"
	levelDevice  = "device"
)

// Model is one preemption question in plain data: the topology (levels and domains), the
// running workloads with the exact devices they hold, and the preemptor. It is what the C ABI
// receives; building it touches no cgo, so it is tested on its own.
type Model struct {
	Levels    []string // root first; the host level is levelNode, the device level levelDevice
	Domains   []Domain // parents before children
	Workloads []Workload
	Preemptor Workload
	// Ineligible are the GPU nodes the preemptor may not use, with the reason; each holds a
	// blocker among Workloads (after the running pods).
	Ineligible map[string]string
}

// Domain is one domain of the topology by path ("zone-a/rack1/node-3/numa0/pci0/gpu3").
// Host-level domains hold the node's pooled capacity (allocatable CPU, memory, pods, and the
// eligibility dimension); other domains hold none (devices: one whole GPU each).
type Domain struct {
	Path, Level string
	Capacity    Pooled
}

// The pooled dimensions of a node (docs/kubernetes.md, "What is modelled"): what the node's
// allocatable offers and its pods request, as the scheduler's NodeResourcesFit counts them, and
// `eligible`, "this node admits the preemptor". Every node has eligibleCapacity of it, so it
// never limits how many replicas land there; a node the preemptor may not use holds a blocker,
// a running workload that is never a victim and holds all of it, so no replica lands there
// while the node's pods still count. Running pods hold none of it. The blocker is a running
// workload rather than a capacity of 0 so that the plugin's persistent mirror changes only the
// nodes whose eligibility changed from one question to the next (a capacity is fixed once the
// topology is sealed).
const (
	dimCPU      = iota // millicores
	dimMemory          // bytes
	dimPods            // pods
	dimEligible        // see above
	numPooled
)

// PooledNames are the pooled dimensions' names in the C-ABI schema, by index.
var PooledNames = [numPooled]string{"cpu_milli", "memory_bytes", "pods", "eligible"}

// eligibleCapacity is each node's capacity of `eligible`: more replicas than any gang has.
const eligibleCapacity = 1 << 20

// Pooled is an amount of each pooled dimension.
type Pooled [numPooled]int64

func (p Pooled) isZero() bool { return p == Pooled{} }

// Workload is a running pod (or a disruptionMode=All PodGroup) or the preemptor.
type Workload struct {
	ID           uint64
	Key          string // what identifies it across questions: "pod/<uid>" or "podgroup/<ns>/<name>"
	Name         string
	Priority     int32
	Preemptible  bool
	Replicas     int32
	WholeDevices int32
	ReplicaScope string // a level that each replica must lie inside, "" none
	GangScope    string // a level that all replicas must lie inside, "" none
	StartTime    float64
	SinceCkpt    float64
	ModelID      string
	ModelGiB     float64
	Extra        float64
	// Demand is what each replica asks of the node's pooled dimensions (a preemptor: its
	// requests and one unit of `eligible`; a running pod: its requests).
	Demand Pooled
	// Protected: evicting it alone violates a PodDisruptionBudget (one of its pods is matched by
	// a PDB that allows no disruption). Such a workload is a victim only in the second pass of
	// the PDB-first order (see pdb.go).
	Protected bool
	Entries   []Entry                     // running workloads: the devices and pools held
	Pods      []*corev1.Pod               // the pods evicted with this workload, one per replica
	Claims    []*resourcev1.ResourceClaim // the claims its pods hold allocated (or with an allocation in flight)
}

// Entry is one whole device held by a replica (the host, i.e. the node name, and the path
// below it), or, with Path "" and Amounts, the pooled amounts a replica holds on its node.
type Entry struct {
	Replica    uint32
	Host, Path string
	Amounts    Pooled
}

// Inputs is the cluster state one question is asked against (from the scheduler's snapshot).
type Inputs struct {
	Nodes  []*corev1.Node
	Pods   map[string][]*corev1.Pod // by node name: the pods the scheduler counts on it
	Slices []*resourcev1.ResourceSlice
	Claims []*resourcev1.ResourceClaim
	// PodGroup looks a PodGroup up (nil: not found); nil means no PodGroups.
	PodGroup func(namespace, name string) *schedulingv1beta1.PodGroup
	// PDBs are the PodDisruptionBudgets, counted as DefaultPreemption counts them.
	PDBs []*policyv1.PodDisruptionBudget
	// Refused are nodes the scheduler's own filters refused the preemptor for a reason
	// preemption cannot change (the plugin fills it from PostFilter's statuses), by node name,
	// with the reason. Nodes the preemptor's spec refuses are found by the model itself.
	Refused map[string]string
	// Nominated are the pending pods nominated to a node (the scheduler's nominator and the
	// plugin's own nominations in flight, which come first): their rooms are reserved for them
	// (see reserve.go).
	Nominated []Nominee
	// EvictedFor maps a victim pod's UID to the UID of the preemptor (pod or PodGroup) the
	// plugin evicted it for: while it terminates, it is gone for that preemptor only.
	EvictedFor map[types.UID]types.UID
	// PendingAllocation is the scheduler's allocation in flight for a claim (made in Reserve,
	// not yet written to the claim's status), nil none; nil means none known (a kubectl dump).
	PendingAllocation func(claim types.UID) *resourcev1.AllocationResult
	// TolerationComparisonOperators is the TaintTolerationComparisonOperators feature gate.
	TolerationComparisonOperators bool
	Now                           time.Time
}

// Unsupported marks a question the model cannot express: the plugin falls back to stock.
type Unsupported struct{ Reason string }

func (u *Unsupported) Error() string { return "not expressible: " + u.Reason }

func unsupported(format string, args ...any) error {
	return &Unsupported{Reason: fmt.Sprintf(format, args...)}
}

type deviceKey struct{ driver, pool, device string }

// objectKey names a namespaced object without building a string per lookup.
type objectKey struct{ namespace, name string }

// builder assembles a Model; devices maps each DRA device to its host and path.
type builder struct {
	args     *Args
	in       *Inputs
	m        Model
	devices  map[deviceKey]Entry
	claims   map[objectKey]*resourcev1.ResourceClaim
	nodeDevs map[string][]string // each node's devices of the question's kind (paths), in order
	levelOf  map[string]string   // label key -> level name
	// extMode: the preemptor asks for the extended resource, so the GPUs modelled are the
	// extended-resource ones; otherwise they are the DRA devices. One kind per question, since
	// a device leaf carries no kind and the two inventories are separate to the scheduler.
	extMode bool
	// nodeCap is each node's pooled capacity (its host domain's); gpuNodes are the nodes with
	// at least one GPU of the question's kind; unlabelled are the configured label keys each
	// node lacks (it has a domain of its own at those levels).
	nodeCap    map[string]Pooled
	gpuNodes   map[string]bool
	unlabelled map[string][]string
	// held are each node's running pods as derived (BuildModel only; a mirror keeps its own).
	held map[string][]*heldPod
}

// newBuilder is a builder with empty topology maps.
func newBuilder(args *Args, in *Inputs, extMode bool) *builder {
	return &builder{args: args, in: in, devices: map[deviceKey]Entry{}, nodeDevs: map[string][]string{},
		levelOf: map[string]string{}, extMode: extMode, nodeCap: map[string]Pooled{}, gpuNodes: map[string]bool{},
		unlabelled: map[string][]string{}}
}

// BuildModel turns the scheduler's view into a Model for preemptor `pods` (one pod, or the
// pods of one PodGroup). Errors name the offending object; *Unsupported means "fall back".
func BuildModel(args *Args, in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) (*Model, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("no preemptor pod")
	}
	b := newBuilder(args, in, wantsExtended(args, pods[0]))
	b.indexClaims()
	if err := b.topology(); err != nil {
		return nil, err
	}
	if err := b.preemptor(pods, group); err != nil {
		return nil, err
	}
	self := selfUIDs(pods, group)
	if err := b.running(append(append([]*corev1.Pod(nil), pods...), goneFor(in, self)...)); err != nil {
		return nil, err
	}
	for i := range b.m.Workloads {
		w := &b.m.Workloads[i]
		w.Protected = protected(in.PDBs, w.Pods)
	}
	b.m.Ineligible = b.ineligible(pods)
	reserved, full := b.reservations(self, func(n string) []*heldPod { return b.held[n] }, b.m.Ineligible)
	for n, why := range full {
		b.m.Ineligible[n] = why
	}
	for _, n := range sortedNodes(b.m.Ineligible) {
		w := blocker(n, b.m.Ineligible[n])
		w.ID = uint64(len(b.m.Workloads) + 1)
		b.m.Workloads = append(b.m.Workloads, w)
	}
	for _, w := range reserved {
		w.ID = uint64(len(b.m.Workloads) + 1)
		b.m.Workloads = append(b.m.Workloads, w)
	}
	b.m.Preemptor.ID = uint64(len(b.m.Workloads) + 1)
	return &b.m, nil
}

// wantsExtended says whether the question is about the extended resource (the preemptor asks
// for it) rather than DRA devices.
func wantsExtended(args *Args, preemptor *corev1.Pod) bool {
	return args.ExtendedResource != "" && extRequest(preemptor, args.ExtendedResource) > 0
}

func (b *builder) indexClaims() {
	b.claims = make(map[objectKey]*resourcev1.ResourceClaim, len(b.in.Claims))
	for _, c := range b.in.Claims {
		b.claims[objectKey{c.Namespace, c.Name}] = c
	}
}

// labelLevels are the configured label keys above the host, with unique level names.
func (b *builder) labelLevels() []string {
	var keys []string
	for _, k := range b.args.TopologyKeys {
		if k == corev1.LabelHostname {
			continue // the host level is the node itself
		}
		keys = append(keys, k)
	}
	return keys
}

func (b *builder) topology() error {
	keys := b.labelLevels()
	b.m.Levels = []string{levelCluster}
	for i, k := range keys {
		name := k[strings.LastIndex(k, "/")+1:]
		for _, used := range b.m.Levels {
			if used == name {
				name = fmt.Sprintf("%s-%d", name, i)
			}
		}
		b.levelOf[k] = name
		b.m.Levels = append(b.m.Levels, name)
	}
	b.m.Levels = append(b.m.Levels, levelNode, levelNUMA, levelPCIe, levelDevice)

	slicesByNode := map[string][]*resourcev1.ResourceSlice{}
	for _, s := range b.in.Slices {
		if s.Spec.NodeName == nil || !b.args.driverWanted(s.Spec.Driver) {
			continue // network-attached or another driver's devices: not GPUs of a node
		}
		slicesByNode[*s.Spec.NodeName] = append(slicesByNode[*s.Spec.NodeName], s)
	}
	nodes := append([]*corev1.Node(nil), b.in.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	seen := map[string]bool{}
	for _, n := range nodes {
		path := ""
		for _, k := range keys {
			v, ok := n.Labels[k]
			if !ok || v == "" {
				// A domain of its own at this level (no label value has a ':'), so the node
				// never shares a domain with another; and ineligible for a gang constrained
				// to this level (see ineligible), as the scheduler's topology placement skips
				// nodes without the key.
				v = "unlabelled:" + n.Name
				b.unlabelled[n.Name] = append(b.unlabelled[n.Name], k)
			}
			path = join(path, v)
			if !seen[path] {
				seen[path] = true
				b.m.Domains = append(b.m.Domains, Domain{Path: path, Level: b.levelOf[k]})
			}
		}
		host := join(path, n.Name)
		capacity, err := nodeCapacity(n)
		if err != nil {
			return err
		}
		b.nodeCap[n.Name] = capacity
		b.m.Domains = append(b.m.Domains, Domain{Path: host, Level: levelNode, Capacity: capacity})
		if err := b.nodeDevices(n, host, slicesByNode[n.Name]); err != nil {
			return err
		}
	}
	return nil
}

// nodeDevices adds the device tree of one node: DRA devices under numaNode > pcieRoot, or,
// with no ResourceSlice, the extended resource's count as devices of unknown placement.
func (b *builder) nodeDevices(n *corev1.Node, host string, slices []*resourcev1.ResourceSlice) error {
	added := map[string]bool{}
	add := func(path, level string) {
		if !added[path] {
			added[path] = true
			b.m.Domains = append(b.m.Domains, Domain{Path: join(host, path), Level: level})
		}
	}
	if b.extMode {
		q, ok := n.Status.Allocatable[corev1.ResourceName(b.args.ExtendedResource)]
		if !ok || q.Value() == 0 {
			return nil
		}
		b.gpuNodes[n.Name] = true
		// A device plugin tells the scheduler nothing about NUMA or PCIe: one unknown domain each.
		add("numa-unknown", levelNUMA)
		add("numa-unknown/pcie-unknown", levelPCIe)
		for i := int64(0); i < q.Value(); i++ {
			p := fmt.Sprintf("numa-unknown/pcie-unknown/dev%d", i)
			add(p, levelDevice)
			b.nodeDevs[n.Name] = append(b.nodeDevs[n.Name], p)
		}
		return nil
	}
	sort.Slice(slices, func(i, j int) bool { return slices[i].Name < slices[j].Name })
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			numa, pcie := "numa-unknown-"+d.Name, "pcie-unknown-"+d.Name
			if a, ok := d.Attributes[NUMAAttribute]; ok {
				v, err := attrString(a)
				if err != nil {
					return fmt.Errorf("ResourceSlice %s device %s: %s: %w", s.Name, d.Name, NUMAAttribute, err)
				}
				numa = "numa" + v
			}
			if a, ok := d.Attributes[PCIeRootAttribute]; ok {
				v, err := attrString(a)
				if err != nil {
					return fmt.Errorf("ResourceSlice %s device %s: %s: %w", s.Name, d.Name, PCIeRootAttribute, err)
				}
				pcie = v
			}
			if strings.Contains(numa+pcie+d.Name, "/") {
				return unsupported("ResourceSlice %s device %s: a '/' in a device or attribute name", s.Name, d.Name)
			}
			add(numa, levelNUMA)
			add(numa+"/"+pcie, levelPCIe)
			p := numa + "/" + pcie + "/" + d.Name
			if added[p] {
				return unsupported("node %s: device %s published twice", n.Name, d.Name)
			}
			add(p, levelDevice)
			b.gpuNodes[n.Name] = true
			b.devices[deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}] = Entry{Host: n.Name, Path: p}
			b.nodeDevs[n.Name] = append(b.nodeDevs[n.Name], p)
		}
	}
	return nil
}

func attrString(a resourcev1.DeviceAttribute) (string, error) {
	switch {
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10), nil
	case a.StringValue != nil:
		return *a.StringValue, nil
	case a.VersionValue != nil:
		return *a.VersionValue, nil
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue), nil
	}
	return "", fmt.Errorf("attribute has no value")
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}

// podClaims are the ResourceClaims a pod uses (direct ones and those made from templates).
func (b *builder) podClaims(p *corev1.Pod) ([]*resourcev1.ResourceClaim, error) {
	var out []*resourcev1.ResourceClaim
	for _, rc := range p.Spec.ResourceClaims {
		name := ""
		if rc.ResourceClaimName != nil {
			name = *rc.ResourceClaimName
		} else {
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == rc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		if name == "" {
			return nil, unsupported("pod %s/%s: claim %s has no ResourceClaim yet", p.Namespace, p.Name, rc.Name)
		}
		c, ok := b.claims[objectKey{p.Namespace, name}]
		if !ok {
			return nil, unsupported("pod %s/%s: ResourceClaim %s not found", p.Namespace, p.Name, name)
		}
		out = append(out, c)
	}
	return out, nil
}

// demand reads what one preemptor pod asks for: whole devices and the NUMA/PCIe scope.
func (b *builder) demand(p *corev1.Pod) (devices int32, scope string, err error) {
	claims, err := b.podClaims(p)
	if err != nil {
		return 0, "", err
	}
	ext := int64(0)
	if b.args.ExtendedResource != "" {
		ext = extRequest(p, b.args.ExtendedResource)
	}
	if ext > 0 && len(claims) > 0 {
		return 0, "", unsupported("pod %s/%s asks for GPUs both through DRA and %s", p.Namespace, p.Name, b.args.ExtendedResource)
	}
	if b.extMode != (ext > 0) {
		return 0, "", unsupported("pod %s/%s: the pods of a gang ask for GPUs in different ways", p.Namespace, p.Name)
	}
	if ext > 0 {
		return int32(ext), "", nil
	}
	if len(claims) > 1 {
		return 0, "", unsupported("pod %s/%s has %d ResourceClaims (one is supported)", p.Namespace, p.Name, len(claims))
	}
	for _, c := range claims {
		if c.Status.Allocation != nil {
			return 0, "", unsupported("pod %s/%s: ResourceClaim %s is already allocated (shared claim)", p.Namespace, p.Name, c.Name)
		}
		for _, r := range c.Spec.Devices.Requests {
			e := r.Exactly
			if e == nil || e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || len(e.Selectors) > 0 ||
				e.AdminAccess != nil && *e.AdminAccess {
				return 0, "", unsupported("ResourceClaim %s/%s request %s: only exactly.count of a device class is modelled", c.Namespace, c.Name, r.Name)
			}
			devices += int32(e.Count)
		}
		for _, con := range c.Spec.Devices.Constraints {
			if con.MatchAttribute == nil {
				return 0, "", unsupported("ResourceClaim %s/%s: a constraint other than matchAttribute", c.Namespace, c.Name)
			}
			switch string(*con.MatchAttribute) {
			case NUMAAttribute:
				scope = tighter(scope, levelNUMA)
			case PCIeRootAttribute:
				scope = tighter(scope, levelPCIe)
			default:
				return 0, "", unsupported("ResourceClaim %s/%s: matchAttribute %s is not a topology attribute", c.Namespace, c.Name, *con.MatchAttribute)
			}
		}
	}
	return devices, scope, nil
}

// extRequest is what a pod requests of an extended resource, over its containers.
func extRequest(p *corev1.Pod, name string) int64 {
	n := int64(0)
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceName(name)]; ok {
			n += q.Value()
		}
	}
	return n
}

func tighter(a, b string) string {
	if a == levelPCIe || b == levelPCIe {
		return levelPCIe
	}
	if a == levelNUMA || b == levelNUMA {
		return levelNUMA
	}
	return ""
}

func (b *builder) preemptor(pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) error {
	if len(pods) == 0 {
		return fmt.Errorf("no preemptor pod")
	}
	w := Workload{Name: pods[0].Namespace + "/" + pods[0].Name, Priority: podPriority(pods[0]), Replicas: int32(len(pods)), Pods: pods}
	for i, p := range pods {
		d, scope, err := b.demand(p)
		if err != nil {
			return err
		}
		pooled, err := b.preemptorRequests(p)
		if err != nil {
			return err
		}
		if i > 0 && (d != w.WholeDevices || scope != w.ReplicaScope || pooled != w.Demand) {
			return unsupported("PodGroup %s: pods %s and %s ask for different devices or resources (one replica shape is modelled)", group.Name, pods[0].Name, p.Name)
		}
		w.WholeDevices, w.ReplicaScope, w.Demand = d, scope, pooled
	}
	if w.WholeDevices == 0 {
		return unsupported("pod %s asks for no GPU: nothing for topopreempt to place", w.Name)
	}
	if group != nil {
		w.Name = "podgroup " + group.Namespace + "/" + group.Name
		if g := group.Spec.SchedulingConstraints; g != nil {
			for _, t := range g.Topology {
				if t.Key == corev1.LabelHostname {
					w.GangScope = levelNode
				} else if l, ok := b.levelOf[t.Key]; ok {
					w.GangScope = l
				} else {
					return unsupported("PodGroup %s/%s: topology key %s is not a configured topologyKey", group.Namespace, group.Name, t.Key)
				}
			}
		}
	}
	b.m.Preemptor = w
	return nil
}

// nodeCapacity is a node's allocatable CPU, memory and pods, and eligibleCapacity.
func nodeCapacity(n *corev1.Node) (Pooled, error) {
	var c Pooled
	a := n.Status.Allocatable
	c[dimCPU] = a.Cpu().MilliValue()
	c[dimMemory] = a.Memory().Value()
	c[dimPods] = a.Pods().Value()
	c[dimEligible] = eligibleCapacity
	for d, v := range c {
		if v < 0 {
			return c, fmt.Errorf("node %s: negative allocatable %s", n.Name, PooledNames[d])
		}
	}
	return c, nil
}

// podRequests is what a pod holds of the pooled dimensions, as NodeResourcesFit counts it
// (containers, init containers, overhead): CPU, memory and one pod.
func podRequests(p *corev1.Pod) (Pooled, corev1.ResourceList) {
	reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	var d Pooled
	d[dimCPU] = reqs.Cpu().MilliValue()
	d[dimMemory] = reqs.Memory().Value()
	d[dimPods] = 1
	return d, reqs
}

// preemptorRequests is what one preemptor pod asks of the pooled dimensions, with one unit of
// `eligible`. A request of anything else the scheduler checks per node (another extended
// resource, ephemeral storage, hugepages) makes the question inexpressible: the model would
// not see whether it fits.
func (b *builder) preemptorRequests(p *corev1.Pod) (Pooled, error) {
	d, reqs := podRequests(p)
	d[dimEligible] = 1
	names := make([]string, 0, len(reqs))
	for name := range reqs {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := reqs[corev1.ResourceName(name)]
		switch {
		case q.IsZero(), name == string(corev1.ResourceCPU), name == string(corev1.ResourceMemory):
		case b.extMode && name == b.args.ExtendedResource:
		default:
			return d, unsupported("pod %s/%s requests %s %s, which the model does not hold", p.Namespace, p.Name, q.String(), name)
		}
	}
	for dim, v := range d {
		if v < 0 {
			return d, fmt.Errorf("pod %s/%s: negative request of %s", p.Namespace, p.Name, PooledNames[dim])
		}
	}
	return d, nil
}

func (b *builder) podGroup(namespace, name string) *schedulingv1beta1.PodGroup {
	if b.in.PodGroup == nil {
		return nil
	}
	return b.in.PodGroup(namespace, name)
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// running turns every pod holding devices into a workload (a disruptionMode=All PodGroup's
// pods into one gang workload), with its exact devices and cost inputs.
func (b *builder) running(preemptors []*corev1.Pod) error {
	skip := podUIDs(preemptors)
	nodeNames := make([]string, 0, len(b.in.Pods))
	for n := range b.in.Pods {
		nodeNames = append(nodeNames, n)
	}
	sort.Strings(nodeNames)
	var all []*heldPod
	b.held = map[string][]*heldPod{}
	for _, n := range nodeNames {
		held, _, err := b.nodeHeld(n, skip)
		if err != nil {
			return err
		}
		b.held[n] = held
		all = append(all, held...)
	}
	ws, err := b.workloads(all)
	if err != nil {
		return err
	}
	b.m.Workloads = ws
	b.m.Preemptor.ID = uint64(len(b.m.Workloads) + 1)
	return nil
}

// podUIDs is the set of the pods' UIDs.
func podUIDs(pods []*corev1.Pod) map[types.UID]bool {
	set := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		set[p.UID] = true
	}
	return set
}

// heldPod is one running pod, with the devices and pooled amounts it holds: what the model
// derives from it alone (its node's topology aside), so that a mirror can keep it while its
// node does not change.
type heldPod struct {
	pod     *corev1.Pod
	devices int32   // whole devices among entries
	demand  Pooled  // its requests (the last entry holds them on the node)
	entries []Entry // its devices, then its pooled amounts on the node
	claims  []*resourcev1.ResourceClaim
	cost    Workload // costInputs: the cost fields only
	group   string   // "<namespace>/<PodGroup name>" the pod names, "" none
	key     string   // the workload key it went into at the mirror's last sync
	// pinned: never a victim, because which of the devices it is modelled as holding it will
	// hold is not known (see placeAwaiting).
	pinned bool
	// inFlight: a device it holds comes from an allocation the scheduler has made but not yet
	// written (Inputs.PendingAllocation), which changes no object version.
	inFlight bool
}

// nodeHeld derives node n's pods (every one holds at least a pod slot, GPUs or not), in the
// builder's order (namespace, name), the pods in `skip` excepted; skipped says whether one was
// on the node. Pods that request more of a pooled dimension than the node's allocatable make
// the question inexpressible (the scheduler never admits that; a pod bound by nodeName can).
//
// A bound pod whose ResourceClaim is not allocated yet (the scheduler binds while it writes the
// allocation) holds what it will hold. The scheduler's allocation in flight, when the view has
// it (Inputs.PendingAllocation), is exact. Otherwise (a kubectl dump, a claim not created yet)
// the pod holds its pooled requests and the devices it may be given, placed so that the model
// never believes more is free than will be: see placeAwaiting. It never makes the question
// inexpressible, nor its node ineligible.
func (b *builder) nodeHeld(n string, skip map[types.UID]bool) (held []*heldPod, skipped bool, err error) {
	pods := append([]*corev1.Pod(nil), b.in.Pods[n]...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	timed := b.args.usesLostWork()
	nextExt := 0
	var total Pooled
	var waiting []awaiting
	for _, p := range pods {
		if skip[p.UID] {
			skipped = true
			continue
		}
		var entries []Entry
		var held1 []*resourcev1.ResourceClaim
		var wait *awaiting
		inFlight := false
		claims, err := b.podClaims(p)
		var u *Unsupported
		if errors.As(err, &u) {
			if !b.extMode {
				wait = &awaiting{count: -1} // a claim not created yet: what it asks is unknown
			}
			claims = nil
		} else if err != nil {
			return nil, false, err
		}
		for _, c := range claims {
			if b.extMode {
				break
			}
			alloc := c.Status.Allocation
			if alloc == nil && b.in.PendingAllocation != nil {
				if alloc = b.in.PendingAllocation(c.UID); alloc != nil {
					inFlight = true
				}
			}
			if alloc == nil {
				if wait == nil {
					wait = &awaiting{}
				}
				wait.add(c)
				continue
			}
			if len(c.Status.ReservedFor) > 1 {
				return nil, false, unsupported("ResourceClaim %s/%s is shared by %d pods", c.Namespace, c.Name, len(c.Status.ReservedFor))
			}
			for _, r := range alloc.Devices.Results {
				if !b.args.driverWanted(r.Driver) {
					continue
				}
				e, ok := b.devices[deviceKey{r.Driver, r.Pool, r.Device}]
				if !ok {
					return nil, false, unsupported("ResourceClaim %s/%s holds device %s/%s/%s that no ResourceSlice publishes", c.Namespace, c.Name, r.Driver, r.Pool, r.Device)
				}
				entries = append(entries, e)
			}
			held1 = append(held1, c)
		}
		if b.extMode {
			for k := int64(0); k < extRequest(p, b.args.ExtendedResource); k++ {
				if nextExt >= len(b.nodeDevs[n]) {
					return nil, false, unsupported("node %s: pods request more %s than it has", n, b.args.ExtendedResource)
				}
				// Which device a device plugin gave is invisible here; any assignment is
				// equivalent because all devices of the node share one unknown domain.
				entries = append(entries, Entry{Host: n, Path: b.nodeDevs[n][nextExt]})
				nextExt++
			}
		}
		devices := int32(len(entries))
		demand, _ := podRequests(p)
		for d, v := range demand {
			if v < 0 {
				return nil, false, fmt.Errorf("pod %s/%s: negative request of %s", p.Namespace, p.Name, PooledNames[d])
			}
			total[d] += v
			if total[d] > b.nodeCap[n][d] {
				return nil, false, unsupported("node %s: its pods request more %s than its allocatable %d (pod %s/%s)", n, PooledNames[d], b.nodeCap[n][d], p.Namespace, p.Name)
			}
		}
		entries = append(entries, Entry{Host: n, Amounts: demand})
		cost, err := costInputs(p, b.in.Now, timed)
		if err != nil {
			return nil, false, err
		}
		h := &heldPod{pod: p, devices: devices, demand: demand, entries: entries, claims: held1, cost: cost, inFlight: inFlight}
		if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
			h.group = p.Namespace + "/" + *sg.PodGroupName
		}
		held = append(held, h)
		if wait != nil {
			wait.h = h
			waiting = append(waiting, *wait)
		}
	}
	b.placeAwaiting(n, held, waiting)
	return held, skipped, nil
}

// awaiting is a bound pod with ResourceClaims not allocated yet: how many devices they ask for
// (-1: unknown) and the scope they must lie in ("" none known).
type awaiting struct {
	h      *heldPod
	count  int32
	scope  string
	claims int
}

// add counts one unallocated claim: its exactly.count requests (a firstAvailable request: its
// largest count), and a matchAttribute on a topology attribute as the scope. A request whose
// count is not fixed (allocation mode All) makes the count unknown. Selectors and device
// classes are not evaluated: counting every request as a GPU only ever holds more.
func (a *awaiting) add(c *resourcev1.ResourceClaim) {
	a.claims++
	for _, r := range c.Spec.Devices.Requests {
		var n int64 = -1
		switch {
		case r.Exactly != nil:
			if r.Exactly.AllocationMode == resourcev1.DeviceAllocationModeExactCount || r.Exactly.AllocationMode == "" {
				n = max(r.Exactly.Count, 1)
			}
		case len(r.FirstAvailable) > 0:
			n = 0
			for _, sub := range r.FirstAvailable {
				if sub.AllocationMode != resourcev1.DeviceAllocationModeExactCount && sub.AllocationMode != "" {
					n = -1
					break
				}
				n = max(n, sub.Count, 1)
			}
		}
		if n < 0 || a.count < 0 {
			a.count = -1
		} else {
			a.count += int32(n)
		}
	}
	scope := ""
	for _, con := range c.Spec.Devices.Constraints {
		if con.MatchAttribute != nil {
			scope = tighter(scope, topologyLevelOf(string(*con.MatchAttribute)))
		}
	}
	if a.claims == 1 {
		a.scope = scope
	} else {
		a.scope = "" // each claim lies in its own domain: no one domain holds them all
	}
}

// topologyLevelOf is the device level a matchAttribute on attribute keeps a claim inside, ""
// for an attribute that is not a topology attribute.
func topologyLevelOf(attribute string) string {
	switch attribute {
	case NUMAAttribute:
		return levelNUMA
	case PCIeRootAttribute:
		return levelPCIe
	}
	return ""
}

// placeAwaiting gives the pods of node n whose claims are not allocated yet (waiting) the
// devices they may be given, among the node's devices no other pod holds (`free`). The model
// must never believe a device free that will not be, and which devices the allocation picks is
// not known, so a lone such pod holds every device it may be given: all free ones, or, when
// its one claim must lie in one NUMA node or PCIe root, those of the domains with enough free
// devices for it (the others stay free, truly). Evicting it frees them all, which is true too.
// Several such pods on one node hold all free devices between them and are pinned (never
// victims): evicting one frees devices nobody can name.
func (b *builder) placeAwaiting(n string, held []*heldPod, waiting []awaiting) {
	if len(waiting) == 0 {
		return
	}
	taken := map[string]bool{}
	for _, h := range held {
		for _, e := range h.entries {
			if e.Path != "" {
				taken[e.Path] = true
			}
		}
	}
	var free []string
	for _, d := range b.nodeDevs[n] {
		if !taken[d] {
			free = append(free, d)
		}
	}
	give := func(h *heldPod, paths []string) {
		pooled := h.entries[len(h.entries)-1]
		h.entries = h.entries[:len(h.entries)-1]
		for _, p := range paths {
			h.entries = append(h.entries, Entry{Host: n, Path: p})
		}
		h.entries = append(h.entries, pooled)
		h.devices += int32(len(paths))
	}
	if len(waiting) == 1 {
		w := waiting[0]
		candidates := free
		if w.count > 0 && w.scope != "" {
			if roomy := roomyDomains(free, w.scope, int(w.count)); len(roomy) > 0 {
				candidates = roomy
			}
		}
		give(w.h, candidates)
		return
	}
	for i, w := range waiting {
		w.h.pinned = true
		k := int(w.count)
		if i == len(waiting)-1 || k < 0 || k > len(free) {
			k = len(free)
		}
		give(w.h, free[:k])
		free = free[k:]
	}
}

// roomyDomains are the paths of `free` (in order) whose domain at `level` (numa, or pcie
// below it) holds at least `count` of them.
func roomyDomains(free []string, level string, count int) []string {
	depth := 1
	if level == levelPCIe {
		depth = 2
	}
	domainOf := func(path string) string {
		parts := strings.SplitN(path, "/", depth+1)
		return strings.Join(parts[:depth], "/")
	}
	size := map[string]int{}
	for _, p := range free {
		size[domainOf(p)]++
	}
	var out []string
	for _, p := range free {
		if size[domainOf(p)] >= count {
			out = append(out, p)
		}
	}
	return out
}

// workloads groups held pods (in the builder's order, every member of each PodGroup they name
// included) into workloads with ids from 1: a pod alone, or the pods of a disruptionMode=All
// PodGroup as one gang. Each held pod's key is left for the caller to record.
func (b *builder) workloads(all []*heldPod) ([]Workload, error) {
	gangs := map[string]int{}           // PodGroup key -> index in the result
	ws := make([]Workload, 0, len(all)) // 10,000 appends of a large struct add up
	for _, h := range all {
		p := h.pod
		prio := podPriority(p)
		workloadKey := "pod/" + string(p.UID)
		if h.group != "" {
			if g := b.podGroup(p.Namespace, *p.Spec.SchedulingGroup.PodGroupName); g != nil && g.Spec.DisruptionMode != nil && g.Spec.DisruptionMode.All != nil {
				if i, ok := gangs[h.group]; ok {
					w := &ws[i]
					if h.devices != w.WholeDevices || h.demand != w.Demand {
						return nil, unsupported("PodGroup %s: members hold different numbers of devices or resources", h.group)
					}
					for _, e := range h.entries {
						e.Replica = uint32(w.Replicas)
						w.Entries = append(w.Entries, e)
					}
					w.Replicas++
					w.Pods = append(w.Pods, p)
					w.Claims = append(w.Claims, h.claims...)
					w.Extra += h.cost.Extra
					w.SinceCkpt = max(w.SinceCkpt, h.cost.SinceCkpt)
					w.Priority = max(w.Priority, prio)
					w.Preemptible = w.Preemptible && p.DeletionTimestamp == nil && !h.pinned
					continue
				}
				gangs[h.group] = len(ws)
				workloadKey = "podgroup/" + h.group
			}
		}
		w := h.cost
		w.ID = uint64(len(ws) + 1)
		w.Key = workloadKey
		w.Name = p.Namespace + "/" + p.Name
		w.Priority = prio
		// Every running pod may be a victim as far as the model goes: the library itself takes
		// only strictly lower priorities than the preemptor's, so the workload does not depend
		// on the question and a mirror can keep it across questions. A terminating pod is the
		// exception: its eviction is running (for another preemptor, or it is being deleted),
		// so evicting it again frees nothing that is not being freed already, and its room is
		// not this preemptor's to plan on (see reserve.go); its resourceVersion moved when it
		// began terminating, so a mirror derives it again.
		w.Preemptible = p.DeletionTimestamp == nil && !h.pinned
		w.Replicas = 1
		w.WholeDevices = h.devices
		w.Demand = h.demand
		// A copy: a gang appends its members' entries, and h.entries stays the node's.
		w.Entries = append([]Entry(nil), h.entries...)
		w.Pods = []*corev1.Pod{p}
		w.Claims = append([]*resourcev1.ResourceClaim(nil), h.claims...)
		ws = append(ws, w)
	}
	return ws, nil
}

// costInputs reads a pod's cost annotations; a malformed one is an error naming the pod.
// The seconds since the last checkpoint are read only when `timed` (a lost_work cost term
// prices them): they change with the clock, so every question would see every pod changed.
func costInputs(p *corev1.Pod, now time.Time, timed bool) (Workload, error) {
	var w Workload
	bad := func(key string, err error) error {
		return fmt.Errorf("pod %s/%s: annotation %s: %w", p.Namespace, p.Name, key, err)
	}
	if p.Status.StartTime != nil {
		w.StartTime = float64(p.Status.StartTime.Unix())
	} else {
		w.StartTime = float64(p.CreationTimestamp.Unix())
	}
	w.StartTime = max(w.StartTime, 0)
	if v, ok := p.Annotations[CostAnnotation]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f != f {
			return w, bad(CostAnnotation, fmt.Errorf("want a finite number >= 0, got %q", v))
		}
		w.Extra = f
	}
	if v, ok := p.Annotations[LastCheckpointAnnotation]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return w, bad(LastCheckpointAnnotation, err)
		}
		if timed {
			w.SinceCkpt = max(now.Sub(t).Seconds(), 0)
		}
	} else if timed && p.Status.StartTime != nil {
		w.SinceCkpt = max(now.Sub(p.Status.StartTime.Time).Seconds(), 0) // never checkpointed
	}
	if v, ok := p.Annotations[ModelSizeAnnotation]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f != f {
			return w, bad(ModelSizeAnnotation, fmt.Errorf("want a finite number >= 0, got %q", v))
		}
		w.ModelGiB = f
	}
	w.ModelID = p.Annotations[ModelIDAnnotation]
	return w, nil
}
