// SPDX-License-Identifier: MIT

package topopreempt

import (
	"errors"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// claimCache is the DRA manager's claim cache as releaseClaims uses it: Get, and Assume, which
// refuses an object whose resourceVersion is below the stored one (as the scheduler's
// assume cache does), or any object while `refuse` is set.
type claimCache struct {
	fwk.ResourceClaimTracker
	objs   map[string]*resourcev1.ResourceClaim
	refuse bool
}

func (c *claimCache) Get(namespace, name string) (*resourcev1.ResourceClaim, error) {
	if o, ok := c.objs[namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, errors.New("not found")
}

func (c *claimCache) AssumeClaimAfterAPICall(claim *resourcev1.ResourceClaim) error {
	if c.refuse || claim.ResourceVersion < c.objs[claim.Namespace+"/"+claim.Name].ResourceVersion {
		return errors.New("out of sync")
	}
	c.objs[claim.Namespace+"/"+claim.Name] = claim
	return nil
}

type draManager struct {
	fwk.SharedDRAManager
	claims *claimCache
}

func (m *draManager) ResourceClaims() fwk.ResourceClaimTracker { return m.claims }

// The gang simulation with DRA sees the victims' claims deallocated, and afterwards the cache
// holds the very objects it held (a claim deallocated already, or replaced by another of the
// same name, is left alone); a newer version that arrived meanwhile stays; a refused release
// puts back what was released and is an error.
func TestReleaseClaimsForTheGangSimulation(t *testing.T) {
	s := newTState()
	s.node("a", "r0")
	s.run("v1", "a", 100, "1", 0, 1)
	s.run("v2", "a", 100, "1", 2)
	cache := &claimCache{objs: map[string]*resourcev1.ResourceClaim{}}
	for i, c := range s.in.Claims {
		c.UID, c.ResourceVersion = types.UID("uid-"+c.Name), "5"
		cache.objs[c.Namespace+"/"+c.Name] = s.in.Claims[i]
	}
	first, second := s.in.Claims[0], s.in.Claims[1]
	victims := []*Workload{{Claims: []*resourcev1.ResourceClaim{first}}, {Claims: []*resourcev1.ResourceClaim{second}}}
	other := second.DeepCopy()
	other.UID = "uid-another"
	cache.objs["ns/"+second.Name] = other // the same name, another claim: not the victim's

	restore, err := releaseClaims(klog.Background(), &draManager{claims: cache}, victims)
	if err != nil {
		t.Fatalf("releaseClaims: %v", err)
	}
	if c := cache.objs["ns/"+first.Name]; c.Status.Allocation != nil || len(c.Status.ReservedFor) != 0 {
		t.Fatalf("the victim's claim is still allocated during the simulation: %+v", c.Status)
	}
	if cache.objs["ns/"+second.Name] != other {
		t.Fatalf("another claim of the same name was released")
	}
	restore()
	if cache.objs["ns/"+first.Name] != first {
		t.Fatalf("after the simulation the cache holds %+v, not the object it held", cache.objs["ns/"+first.Name])
	}

	// A newer version arrives during the simulation: restore leaves it.
	restore, err = releaseClaims(klog.Background(), &draManager{claims: cache}, victims)
	if err != nil {
		t.Fatalf("releaseClaims: %v", err)
	}
	newer := first.DeepCopy()
	newer.ResourceVersion = "6"
	cache.objs["ns/"+first.Name] = newer
	restore()
	if cache.objs["ns/"+first.Name] != newer {
		t.Fatalf("restore overwrote a newer version")
	}

	// A refused release: an error, and nothing stays released.
	cache.objs["ns/"+first.Name] = first
	cache.refuse = true
	if _, err := releaseClaims(klog.Background(), &draManager{claims: cache}, victims); err == nil {
		t.Fatal("a refused release was not an error")
	}
	if cache.objs["ns/"+first.Name] != first {
		t.Fatal("a refused release changed the cache")
	}
	if _, err := releaseClaims(klog.Background(), nil, victims); err != nil {
		t.Fatalf("no DRA manager: %v", err)
	}
}
