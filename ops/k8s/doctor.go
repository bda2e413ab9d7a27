package k8s

import (
	"context"
	"fmt"
	"time"

	authv1 "k8s.io/api/authorization/v1"
)

// Permission is one access the backend needs in its namespace.
type Permission struct {
	Verb, Resource, Subresource string
	Group                       string // the API group ("": core)
}

func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	return p.Verb + " " + r
}

// Needed lists what the backend does with the API: the Role of
// deploy/k8s/rbac.yaml grants exactly these.
var Needed = []Permission{
	{"create", "pods", "", ""}, {"get", "pods", "", ""}, {"list", "pods", "", ""},
	{"watch", "pods", "", ""}, {"delete", "pods", "", ""}, {"create", "pods", "exec", ""},
}

// PoolsNeeded is what pools (agent-sandbox) need besides Needed: the
// pi-sandbox-pools Role of deploy/k8s/rbac.yaml grants exactly these.
var PoolsNeeded = []Permission{
	{"patch", "pods", "", ""},
	{"get", "sandboxes", "", "agents.x-k8s.io"},
	{"create", "sandboxtemplates", "", "extensions.agents.x-k8s.io"}, {"get", "sandboxtemplates", "", "extensions.agents.x-k8s.io"},
	{"update", "sandboxtemplates", "", "extensions.agents.x-k8s.io"}, {"delete", "sandboxtemplates", "", "extensions.agents.x-k8s.io"},
	{"create", "sandboxwarmpools", "", "extensions.agents.x-k8s.io"}, {"get", "sandboxwarmpools", "", "extensions.agents.x-k8s.io"},
	{"list", "sandboxwarmpools", "", "extensions.agents.x-k8s.io"}, {"update", "sandboxwarmpools", "", "extensions.agents.x-k8s.io"},
	{"delete", "sandboxwarmpools", "", "extensions.agents.x-k8s.io"},
	{"create", "sandboxclaims", "", "extensions.agents.x-k8s.io"}, {"get", "sandboxclaims", "", "extensions.agents.x-k8s.io"},
	{"delete", "sandboxclaims", "", "extensions.agents.x-k8s.io"},
}

// ServerVersion returns the API server's version.
func ServerVersion(c *Client) (string, error) {
	v, err := c.api.serverVersion(context.Background())
	if err != nil {
		return "", apiErr("server version", err)
	}
	return v.GitVersion, nil
}

// Missing returns the permissions of Needed the client lacks in its
// namespace (SelfSubjectAccessReview).
func Missing(ctx context.Context, c *Client) ([]Permission, error) {
	return missingOf(ctx, c, Needed)
}

func missingOf(ctx context.Context, c *Client, perms []Permission) ([]Permission, error) {
	var missing []Permission
	for _, p := range perms {
		r := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{Namespace: c.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource},
		}}
		res, err := c.api.accessReview(ctx, r)
		if err != nil {
			return nil, apiErr("access review", err)
		}
		if !res.Status.Allowed {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// TryPod creates an ephemeral pod from cfg.Image, waits for it to run and
// deletes it; it returns how long the start took and whether the pod ran
// in a user namespace.
func TryPod(ctx context.Context, cfg Config) (time.Duration, bool, error) {
	if cfg.Image == "" {
		return 0, false, ErrNoTarget
	}
	if err := cfg.validate(); err != nil {
		return 0, false, err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return 0, false, err
	}
	cfg.fillImageDefaults()
	start := time.Now()
	name, userns, err := createPod(ctx, c, &cfg, KindEphemeral)
	if err != nil {
		return 0, false, err
	}
	d := time.Since(start)
	if err := deletePod(c, name, true); err != nil {
		return d, userns, fmt.Errorf("k8s: delete the test pod: %w", err)
	}
	return d, userns, nil
}
