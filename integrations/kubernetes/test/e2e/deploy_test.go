// SPDX-License-Identifier: MIT

package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/topopreempt/topopreempt/integrations/kubernetes/internal/cluster"
)

var deployManifest = flag.String("deploy", "", "the deployment manifest (deploy/topopreempt-scheduler.yaml): applied with kubectl apply --dry-run=server, then the -bin kube-scheduler runs with exactly its ConfigMap's configuration and must preempt (see TestDeployManifests)")

// deployment is what a manifest of TopoPreempt as a second scheduler says about running it.
type deployment struct {
	objects       int      // documents in the manifest
	args          []string // the scheduler container's arguments, its binary left out
	config        []byte   // the KubeSchedulerConfiguration it reads: a key of a ConfigMap
	configFrom    string   // "ConfigMap NAMESPACE/NAME key KEY", for messages
	schedulerName string   // its one profile's
	// The TopoPreempt args of that profile that the check depends on.
	extendedResource string
	topologyKeys     []string
}

// readDeployment follows the manifest as the kubelet would: the Deployment's container runs
// with --config=PATH, PATH lies in a volume mounted from a ConfigMap, and the ConfigMap's key
// (PATH below the mount) is the configuration.
func readDeployment(file string) (*deployment, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	d := &deployment{}
	configMaps := map[string]*corev1.ConfigMap{} // by namespace/name
	var deploys []*appsv1.Deployment
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, d.objects, err)
		}
		if meta.Kind == "" {
			continue // comments only
		}
		d.objects++
		switch meta.Kind {
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := yaml.UnmarshalStrict(doc, cm); err != nil {
				return nil, fmt.Errorf("%s: ConfigMap: %w", file, err)
			}
			configMaps[cm.Namespace+"/"+cm.Name] = cm
		case "Deployment":
			dep := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict(doc, dep); err != nil {
				return nil, fmt.Errorf("%s: Deployment: %w", file, err)
			}
			deploys = append(deploys, dep)
		}
	}
	if len(deploys) != 1 || len(deploys[0].Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%s: want one Deployment of one container, got %d Deployments", file, len(deploys))
	}
	dep := deploys[0]
	container := dep.Spec.Template.Spec.Containers[0]
	command := append(append([]string{}, container.Command...), container.Args...)
	if len(command) < 2 {
		return nil, fmt.Errorf("%s: the container's command %q names no arguments", file, command)
	}
	d.args = command[1:]
	configPath := ""
	for _, a := range d.args {
		if value, ok := strings.CutPrefix(a, "--config="); ok {
			configPath = value
		}
	}
	if configPath == "" {
		return nil, fmt.Errorf("%s: the container's arguments %q have no --config=PATH", file, d.args)
	}
	for _, m := range container.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, configPath)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			key := path.Join(m.SubPath, rel)
			cm := configMaps[dep.Namespace+"/"+v.ConfigMap.Name]
			if cm == nil || cm.Data[key] == "" {
				return nil, fmt.Errorf("%s: --config=%s is key %q of ConfigMap %s/%s, which the manifest does not hold", file, configPath, key, dep.Namespace, v.ConfigMap.Name)
			}
			d.config = []byte(cm.Data[key])
			d.configFrom = fmt.Sprintf("ConfigMap %s/%s key %s", dep.Namespace, cm.Name, key)
		}
	}
	if d.config == nil {
		return nil, fmt.Errorf("%s: --config=%s lies in no ConfigMap volume of the Deployment", file, configPath)
	}
	var config struct {
		Kind     string `json:"kind"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			PluginConfig  []struct {
				Name string `json:"name"`
				Args struct {
					ExtendedResource string   `json:"extendedResource"`
					TopologyKeys     []string `json:"topologyKeys"`
				} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(d.config, &config); err != nil {
		return nil, fmt.Errorf("%s: %w", d.configFrom, err)
	}
	if config.Kind != "KubeSchedulerConfiguration" || len(config.Profiles) != 1 {
		return nil, fmt.Errorf("%s: want a KubeSchedulerConfiguration of one profile", d.configFrom)
	}
	d.schedulerName = config.Profiles[0].SchedulerName
	for _, pc := range config.Profiles[0].PluginConfig {
		if pc.Name == "TopoPreempt" {
			d.extendedResource = pc.Args.ExtendedResource
			d.topologyKeys = pc.Args.TopologyKeys
		}
	}
	if d.schedulerName == "" || d.schedulerName == corev1.DefaultSchedulerName {
		return nil, fmt.Errorf("%s: a second scheduler needs a schedulerName of its own, not %q", d.configFrom, d.schedulerName)
	}
	if d.extendedResource == "" || len(d.topologyKeys) == 0 {
		return nil, fmt.Errorf("%s: the check needs TopoPreempt's args extendedResource and topologyKeys", d.configFrom)
	}
	return d, nil
}

// TestDeployManifests checks what an administrator would apply: the manifest is accepted by a
// real v1.37.2 API server (kubectl apply --dry-run=server: every object passes validation and
// admission, nothing is stored), and the built kube-scheduler, run with the Deployment's
// arguments and exactly the configuration of its ConfigMap, schedules a pod that names it and
// preempts through TopoPreempt (not stock DefaultPreemption), on a node whose GPUs are the
// config's extended resource. About 10 s (7.4 s measured), on a control plane of its own.
func TestDeployManifests(t *testing.T) {
	if *deployManifest == "" || *binDir == "" {
		t.Skip("needs -deploy and -bin")
	}
	d, err := readDeployment(*deployManifest)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "topopreempt-k8s.")
	if err != nil {
		t.Fatal(err)
	}
	if !*keepDir {
		defer os.RemoveAll(dir)
	}
	c, err := startControlPlane(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	kubectl := exec.CommandContext(ctx, filepath.Join(*binDir, "kubectl"), "--kubeconfig="+c.Kubeconfig,
		"apply", "--dry-run=server", "-f", *deployManifest)
	out, err := kubectl.CombinedOutput()
	logf("deploy: kubectl apply --dry-run=server -f %s:\n%s", *deployManifest, out)
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v", err)
	}
	if accepted := strings.Count(string(out), "(server dry run)"); accepted != d.objects {
		t.Fatalf("the API server accepted %d of the manifest's %d objects", accepted, d.objects)
	}

	sched, err := c.StartDeployedScheduler(ctx, "kube-scheduler-deployed", filepath.Join(*binDir, "kube-scheduler"), d.config, d.args)
	if err != nil {
		t.Fatalf("kube-scheduler with the %s: %v", d.configFrom, err)
	}
	logf("deploy: kube-scheduler ready with the %s (log %s)", d.configFrom, sched.LogPath())
	if err := preemptOnce(ctx, c, d); err != nil {
		t.Fatalf("%v; scheduler log %s", err, sched.LogPath())
	}
	logs, err := os.ReadFile(sched.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logs, []byte(`"topopreempt: preempting"`)) {
		t.Fatalf("the preemption was not TopoPreempt's (no \"topopreempt: preempting\" in %s)", sched.LogPath())
	}
	logf("deploy: TopoPreempt preempted under the deployed configuration")
}

// preemptOnce fills one node's GPUs (d's extended resource) with a low-priority pod and submits
// a high-priority pod for all of them to d's scheduler: it must evict the fill and run there.
func preemptOnce(ctx context.Context, c *cluster.Cluster, d *deployment) error {
	client := c.Client
	const ns, nodeName = "deploy-check", "deploy-n0"
	gpus := corev1.ResourceName(d.extendedResource)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	node := makeNode(NodeSpec{Name: nodeName})
	node.Labels = map[string]string{"type": "kwok"}
	for _, key := range d.topologyKeys {
		node.Labels[key] = "deploy-" + path.Base(key)
	}
	node.Labels[HostLabel] = nodeName
	delete(node.Status.Capacity, GPUResource)
	node.Status.Capacity[gpus] = *resource.NewQuantity(GPUsPerNode, resource.DecimalSI)
	node.Status.Allocatable = node.Status.Capacity
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return err
	}
	pod := func(name, priority string) *corev1.Pod {
		p := makePod(ns, name, "deploy", priority, "", "", 0, 5, 1000)
		count := *resource.NewQuantity(GPUsPerNode, resource.DecimalSI)
		p.Spec.Containers[0].Resources.Requests[gpus] = count
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpus: count}
		return p
	}
	fill := pod("fill", "low")
	fill.Spec.NodeName = nodeName
	if _, err := client.CoreV1().Pods(ns).Create(ctx, fill, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := waitPod(ctx, client, ns, "fill", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }); err != nil {
		return fmt.Errorf("fill pod: %w", err)
	}
	preemptor := pod("preemptor", "preemptor")
	preemptor.Spec.SchedulerName = d.schedulerName
	if _, err := client.CoreV1().Pods(ns).Create(ctx, preemptor, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := waitPod(ctx, client, ns, "preemptor", func(p *corev1.Pod) bool {
		return p.Spec.NodeName == nodeName && p.Status.Phase == corev1.PodRunning
	}); err != nil {
		return fmt.Errorf("the preemptor (schedulerName %s) did not run on %s: %w", d.schedulerName, nodeName, err)
	}
	if _, err := client.CoreV1().Pods(ns).Get(ctx, "fill", metav1.GetOptions{}); err == nil {
		return fmt.Errorf("the preemptor runs, but the fill pod is still there")
	}
	return nil
}

// waitPod polls the pod until done says so, for at most a minute.
func waitPod(ctx context.Context, client kubernetes.Interface, ns, name string, done func(*corev1.Pod) bool) error {
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && done(p) {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("pod %s/%s: node %q, phase %s after a minute", ns, name, p.Spec.NodeName, p.Status.Phase)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
