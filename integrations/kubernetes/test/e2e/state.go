// SPDX-License-Identifier: MIT

package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The fake GPU driver: every node has 8 GPUs gpu0..gpu7 on 2 NUMA nodes (gpu0-3 on 0,
// gpu4-7 on 1) and 4 PCIe roots (two GPUs each), published as one ResourceSlice per node
// with the standard attributes resource.kubernetes.io/numaNode and .../pcieRoot.
const (
	Driver       = "gpu.topopreempt.dev"
	DeviceClass  = "gpu.topopreempt.dev"
	GPUsPerNode  = 8
	GPUsPerNUMA  = 4
	GPUsPerPCIe  = 2
	NUMAAttr     = "resource.kubernetes.io/numaNode"
	PCIeRootAttr = "resource.kubernetes.io/pcieRoot"
	IndexAttr    = Driver + "/index"

	// GPUResource is the same GPUs as a node extended resource (a device plugin's view): a
	// count per node, with no NUMA or PCIe placement the scheduler could see.
	GPUResource corev1.ResourceName = "topopreempt.dev/gpu"

	ZoneLabel  = "topology.kubernetes.io/zone"
	BlockLabel = "topology.topopreempt.dev/block"
	RackLabel  = "topology.topopreempt.dev/rack"
	HostLabel  = "kubernetes.io/hostname"

	// CostAnnotation is what evicting a pod costs (e.g. GPU-hours since its last
	// checkpoint). Stock kube-scheduler ignores it; the report sums it over the victims.
	CostAnnotation = "topopreempt.dev/cost"
	RoleLabel      = "topopreempt.dev/role"
	ScenarioLabel  = "topopreempt.dev/scenario"
)

// PriorityClasses used by the scenarios. "high" is above the preemptors: never a victim.
var PriorityClasses = map[string]int32{"low": 100, "low-b": 110, "mid": 200, "preemptor": 500, "high": 1000}

// NodeSpec is one fake node and where it sits in the topology; NoRack leaves the rack label
// off, Labels and Taints are added to the node.
type NodeSpec struct {
	Name, Zone, Block, Rack string
	NoRack                  bool
	Labels                  map[string]string
	Taints                  []corev1.Taint
}

// NodeCPUMilli is every node's allocatable CPU (128 cores).
const NodeCPUMilli = 128000

// FillPod is a running pod of the initial state: bound to Node, holding exactly GPUs
// (device indexes; none for a CPU-only pod), optionally a member of the fill PodGroup Group.
// It requests CPUMilli millicores (0: one core) and carries Labels.
type FillPod struct {
	Name, Node, Priority string
	GPUs                 []int
	Cost                 float64
	Group                string
	CPUMilli             int
	Labels               map[string]string
}

// cpuOf is a fill pod's CPU request in millicores.
func (f FillPod) cpuOf() int {
	if f.CPUMilli == 0 {
		return 1000
	}
	return f.CPUMilli
}

// PDBSpec is a PodDisruptionBudget over the fill pods with these labels that allows no
// disruption (minAvailable: all of them).
type PDBSpec struct {
	Name     string
	Selector map[string]string
}

// GroupSpec is a PodGroup (gang) of the initial state or the preemptor's.
type GroupSpec struct {
	Name, Priority string
	MinCount       int32
	TopologyKey    string // PodGroup.spec.schedulingConstraints.topology[0].key, "" for none
	DisruptAll     bool   // disruptionMode all: the group is evicted as a whole
}

func gpuName(i int) string { return fmt.Sprintf("gpu%d", i) }

// NUMAOf is the NUMA node of GPU i.
func NUMAOf(i int) int { return i / GPUsPerNUMA }

func pcieRoot(i int) string { return fmt.Sprintf("pci0000:%02x", 0x10*(i/GPUsPerPCIe+1)) }

func makeNode(n NodeSpec) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(NodeCPUMilli, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPUResource:           *resource.NewQuantity(GPUsPerNode, resource.DecimalSI),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name,
			Labels: map[string]string{HostLabel: n.Name, ZoneLabel: n.Zone, BlockLabel: n.Block,
				RackLabel: n.Rack, "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec:   corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	for k, v := range n.Labels {
		node.Labels[k] = v
	}
	if n.NoRack {
		delete(node.Labels, RackLabel)
	}
	return node
}

func makeSlice(node string) *resourcev1.ResourceSlice {
	devices := make([]resourcev1.Device, GPUsPerNode)
	for i := range devices {
		devices[i] = resourcev1.Device{
			Name: gpuName(i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				NUMAAttr:     {IntValue: ptr.To(int64(NUMAOf(i)))},
				PCIeRootAttr: {StringValue: ptr.To(pcieRoot(i))},
				IndexAttr:    {IntValue: ptr.To(int64(i))},
			},
		}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   Driver,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  devices,
		},
	}
}

// makeClaim requests count GPUs; sameNUMA adds a matchAttribute constraint on numaNode.
func makeClaim(ns, name string, count int, sameNUMA bool) *resourcev1.ResourceClaim {
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: DeviceClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
				Count: int64(count)}}},
		}},
	}
	if sameNUMA {
		claim.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{
			Requests: []string{"gpus"}, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(NUMAAttr))}}
	}
	return claim
}

// makePod is a pod of priority class priority requesting cpuMilli millicores; claim names its
// ResourceClaim ("" for none), extendedGPUs is its count of GPUResource (0 for none).
func makePod(ns, name, role, priority, claim, group string, extendedGPUs int, cost float64, cpuMilli int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{RoleLabel: role},
			Annotations: map[string]string{CostAnnotation: fmt.Sprint(cost)}},
		Spec: corev1.PodSpec{
			PriorityClassName: priority,
			Containers: []corev1.Container{{Name: "work", Image: "registry.invalid/fake:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpuMilli), resource.DecimalSI),
					corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if claim != "" {
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(claim)}}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
	}
	if extendedGPUs > 0 {
		gpus := *resource.NewQuantity(int64(extendedGPUs), resource.DecimalSI)
		pod.Spec.Containers[0].Resources.Requests[GPUResource] = gpus
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: gpus}
	}
	if group != "" {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
	return pod
}

func makePodGroup(ns string, g GroupSpec) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: g.Name},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: g.MinCount}},
			PriorityClassName: g.Priority,
		},
	}
	if g.TopologyKey != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: g.TopologyKey}}}
	}
	if g.DisruptAll {
		pg.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	}
	return pg
}

// ensureClusterObjects creates the priority classes and the DeviceClass once.
func ensureClusterObjects(ctx context.Context, client kubernetes.Interface) error {
	for name, value := range PriorityClasses {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DeviceClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", Driver)}}}},
	}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// applyState creates the nodes, their ResourceSlices, the fill PodGroups and the fill pods.
// Fill pods are placed by the harness exactly as a scheduler records a placement (the claim's
// allocation and reservation, the pod's nodeName), so both schedulers of a head-to-head start
// from byte-identical states and a 10,000-pod fill needs no 10,000 scheduling cycles.
func applyState(ctx context.Context, client kubernetes.Interface, ns string, s *Scenario) error {
	if err := parallel(len(s.Nodes), 16, func(i int) error {
		if _, err := client.CoreV1().Nodes().Create(ctx, makeNode(s.Nodes[i]), metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := client.ResourceV1().ResourceSlices().Create(ctx, makeSlice(s.Nodes[i].Name), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	for _, g := range s.FillGroups {
		if _, err := client.SchedulingV1beta1().PodGroups(ns).Create(ctx, makePodGroup(ns, g), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("podgroup %s: %w", g.Name, err)
		}
	}
	if err := parallel(len(s.Fill), 32, func(i int) error { return placeFillPod(ctx, client, ns, s.Mode, s.Fill[i]) }); err != nil {
		return err
	}
	for _, b := range s.PDBs {
		if err := createPDB(ctx, client, ns, s, b); err != nil {
			return fmt.Errorf("pdb %s: %w", b.Name, err)
		}
	}
	return nil
}

func addLabels(pod *corev1.Pod, labels map[string]string) {
	for k, v := range labels {
		pod.Labels[k] = v
	}
}

// matches says whether a fill pod carries every label of selector.
func matches(f FillPod, selector map[string]string) bool {
	for k, v := range selector {
		if f.Labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// createPDB creates the PDB with minAvailable = its pods, and writes the status the
// disruption controller would (this control plane runs none): no disruption allowed, so
// evicting any of its pods is one violation to both schedulers.
func createPDB(ctx context.Context, client kubernetes.Interface, ns string, s *Scenario, b PDBSpec) error {
	count := int32(0)
	for _, f := range s.Fill {
		if matches(f, b.Selector) {
			count++
		}
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(count)),
			Selector: &metav1.LabelSelector{MatchLabels: b.Selector}}}
	created, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: created.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: count, DesiredHealthy: count, ExpectedPods: count}
	_, err = client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func placeFillPod(ctx context.Context, client kubernetes.Interface, ns string, mode GPUMode, f FillPod) error {
	if mode == ExtendedResource {
		pod := makePod(ns, f.Name, "fill", f.Priority, "", f.Group, len(f.GPUs), f.Cost, f.cpuOf())
		addLabels(pod, f.Labels)
		pod.Spec.NodeName = f.Node
		_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	claimName := ""
	if len(f.GPUs) > 0 {
		claimName = f.Name + "-gpus"
		claim := makeClaim(ns, claimName, len(f.GPUs), false)
		// The finalizer kube-scheduler puts on every claim it allocates: without it the
		// resourceclaim controller never deallocates the claim once its pod is gone, so an
		// evicted victim's GPUs would stay allocated forever.
		claim.Finalizers = []string{resourcev1.Finalizer}
		if _, err := client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("claim %s: %w", claimName, err)
		}
	}
	pod := makePod(ns, f.Name, "fill", f.Priority, claimName, f.Group, 0, f.Cost, f.cpuOf())
	addLabels(pod, f.Labels)
	pod.Spec.NodeName = f.Node
	created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("pod %s: %w", f.Name, err)
	}
	if claimName == "" {
		return nil
	}
	claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	results := make([]resourcev1.DeviceRequestAllocationResult, len(f.GPUs))
	for k, gpu := range f.GPUs {
		results[k] = resourcev1.DeviceRequestAllocationResult{Request: "gpus", Driver: Driver, Pool: f.Node, Device: gpuName(gpu)}
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: results},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{f.Node}}}}}},
		AllocationTimestamp: ptr.To(metav1.Now()),
	}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: created.Name, UID: created.UID}}
	if _, err := client.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("allocate claim %s: %w", claimName, err)
	}
	return nil
}

// waitFillRunning waits until KWOK reports every fill pod Running.
func waitFillRunning(ctx context.Context, client kubernetes.Interface, ns string, want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: RoleLabel + "=fill", ResourceVersion: "0"})
		if err != nil {
			return err
		}
		running := 0
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d fill pods running after %s", running, want, limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// clearState deletes everything a scenario made: pods (at once), claims (finalizers
// dropped), PodGroups, ResourceSlices and nodes. Namespaces are left: there is no namespace
// controller here, and every scenario uses its own.
func clearState(ctx context.Context, client kubernetes.Interface, ns string) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := again(func() error { return client.CoreV1().Pods(ns).DeleteCollection(ctx, now, metav1.ListOptions{}) }); err != nil {
		return err
	}
	claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		if len(claims.Items[i].Finalizers) > 0 {
			c := claims.Items[i].DeepCopy()
			c.Finalizers = nil
			_, _ = client.ResourceV1().ResourceClaims(ns).Update(ctx, c, metav1.UpdateOptions{})
		}
	}
	if err := again(func() error {
		return client.ResourceV1().ResourceClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}); err != nil {
		return err
	}
	if err := client.SchedulingV1beta1().PodGroups(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := client.PolicyV1().PodDisruptionBudgets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := again(func() error {
		return client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}); err != nil {
		return err
	}
	return again(func() error {
		return client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	})
}

// again retries a DeleteCollection that timed out: on a loaded 2-core machine deleting 10,000
// pods can outlast the client's 60 s request timeout while the server goes on deleting, and a
// half-cleared state made the next variant's run fail ("nodes already exists"). Bounded: 5 tries.
func again(call func() error) error {
	var err error
	for try := 0; try < 5; try++ {
		if err = call(); err == nil {
			return nil
		}
		logf("clearing state: %v (try %d of 5)", err, try+1)
	}
	return err
}
