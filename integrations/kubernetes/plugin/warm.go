// SPDX-License-Identifier: MIT

package topopreempt

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
)

// warmInterval is how often the background sync looks whether the informers saw a change.
const warmInterval = time.Second

// keepWarm keeps the mirrors close to the informers' caches in the background, so that a
// PostFilter call finds them built and applies only what changed since (the pods the
// scheduler assumed in the last moments, a claim allocated in flight). Without it the first
// question after a quiet period would pay the whole build. Event handlers only mark the
// view dirty; the sync itself diffs the complete lists (mirror.go), so a missed or
// reordered event cannot leave the mirror wrong. Stops with ctx.
func (pl *Plugin) keepWarm(ctx context.Context) {
	logger := klog.FromContext(ctx)
	f := pl.fh.SharedInformerFactory()
	if f == nil {
		return
	}
	nodes := f.Core().V1().Nodes()
	pods := f.Core().V1().Pods()
	slices := f.Resource().V1().ResourceSlices()
	claims := f.Resource().V1().ResourceClaims()
	var groups schedulinglisters.PodGroupLister
	if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		groups = f.Scheduling().V1beta1().PodGroups().Lister()
	}
	var dirty atomic.Bool
	dirty.Store(true)
	mark := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { dirty.Store(true) },
		UpdateFunc: func(any, any) { dirty.Store(true) },
		DeleteFunc: func(any) { dirty.Store(true) },
	}
	for _, inf := range []cache.SharedIndexInformer{nodes.Informer(), pods.Informer(), slices.Informer(), claims.Informer()} {
		if _, err := inf.AddEventHandler(mark); err != nil {
			logger.Info("topopreempt: no background mirror (PostFilter builds it)", "reason", err.Error())
			return
		}
	}
	go func() {
		defer func() {
			if r := recover(); r != nil {
				logger.Error(nil, "topopreempt: recovered in the background mirror sync (PostFilter keeps syncing)", "panic", r)
			}
		}()
		tick := time.NewTicker(warmInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				for _, m := range pl.mirrors {
					m.close()
				}
				return
			case <-tick.C:
			}
			if !dirty.Swap(false) {
				continue
			}
			in, err := informerInputs(nodes.Lister().List, pods.Lister().List, slices.Lister().List, claims.Lister().List, groups)
			if err != nil {
				logger.V(2).Info("topopreempt: background mirror sync skipped", "reason", err.Error())
				continue
			}
			pl.warm(logger, in)
		}
	}()
}

// warm syncs every mirror in use with `in`.
func (pl *Plugin) warm(logger klog.Logger, in *Inputs) {
	for ext, m := range pl.mirrors {
		if ext && pl.args.ExtendedResource == "" {
			continue
		}
		m.mu.Lock()
		start := time.Now()
		err := m.sync(&pl.args, in, nil)
		m.mu.Unlock()
		if err != nil {
			logger.V(2).Info("topopreempt: background mirror sync failed (PostFilter retries it)", "extendedResource", ext, "reason", err.Error())
			continue
		}
		logger.V(4).Info("topopreempt: background mirror sync", "extendedResource", ext, "took", time.Since(start))
	}
}

// informerInputs is the informers' view in the shape of the scheduler's snapshot: the pods
// bound to a known node and not finished, the slices, the claims, the PodGroups.
func informerInputs(nodes func(labels.Selector) ([]*corev1.Node, error), pods func(labels.Selector) ([]*corev1.Pod, error),
	slices func(labels.Selector) ([]*resourcev1.ResourceSlice, error), claims func(labels.Selector) ([]*resourcev1.ResourceClaim, error),
	groups schedulinglisters.PodGroupLister) (*Inputs, error) {
	in := &Inputs{Pods: map[string][]*corev1.Pod{}, Now: time.Now()}
	var err error
	if in.Nodes, err = nodes(labels.Everything()); err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(in.Nodes))
	for _, n := range in.Nodes {
		known[n.Name] = true
	}
	ps, err := pods(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.Spec.NodeName == "" || !known[p.Spec.NodeName] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		in.Pods[p.Spec.NodeName] = append(in.Pods[p.Spec.NodeName], p)
	}
	if in.Slices, err = slices(labels.Everything()); err != nil {
		return nil, err
	}
	if in.Claims, err = claims(labels.Everything()); err != nil {
		return nil, err
	}
	if groups != nil {
		in.PodGroup = func(namespace, name string) *schedulingv1beta1.PodGroup {
			g, err := groups.PodGroups(namespace).Get(name)
			if err != nil {
				return nil
			}
			return g
		}
	}
	return in, nil
}
