package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	asv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The agent-sandbox API (kubernetes-sigs/agent-sandbox): Sandboxes in
// agents.x-k8s.io, SandboxTemplates, SandboxWarmPools and SandboxClaims in
// extensions.agents.x-k8s.io, over REST clients like the pods'. Their
// scheme is made on first use: a process that opens no pool registers
// nothing more at start.
var (
	asSchemeOnce sync.Once
	asCodecs     serializer.CodecFactory
	asParams     runtime.ParameterCodec
)

func asScheme() {
	asSchemeOnce.Do(func() {
		s := runtime.NewScheme()
		if err := asv1.AddToScheme(s); err != nil {
			panic(err)
		}
		if err := extv1.AddToScheme(s); err != nil {
			panic(err)
		}
		asCodecs, asParams = serializer.NewCodecFactory(s), runtime.NewParameterCodec(s)
	})
}

// asClients are the REST clients of the two groups, made on first use.
type asClients struct {
	sandboxes *rest.RESTClient // agents.x-k8s.io/v1beta1
	ext       *rest.RESTClient // extensions.agents.x-k8s.io/v1beta1
}

func (c *Client) agentSandbox() (*asClients, error) {
	c.asOnce.Do(func() {
		asScheme()
		client := func(gv schema.GroupVersion) (*rest.RESTClient, error) {
			rc := rest.CopyConfig(c.REST)
			rc.APIPath, rc.GroupVersion = "/apis", &gv
			rc.NegotiatedSerializer = asCodecs.WithoutConversion()
			return rest.RESTClientFor(rc)
		}
		var as asClients
		var err error
		if as.sandboxes, err = client(asv1.GroupVersion); err == nil {
			as.ext, err = client(extv1.GroupVersion)
		}
		c.as, c.asErr = &as, err
	})
	return c.as, c.asErr
}

// asResources are the agent-sandbox resources pools use, with the CRD
// that defines each (for the error of a cluster without it).
var asResources = map[string]string{
	"sandboxes":        "sandboxes.agents.x-k8s.io",
	"sandboxtemplates": "sandboxtemplates.extensions.agents.x-k8s.io",
	"sandboxwarmpools": "sandboxwarmpools.extensions.agents.x-k8s.io",
	"sandboxclaims":    "sandboxclaims.extensions.agents.x-k8s.io",
}

// ErrNoAgentSandbox is the cause of a pool call on a cluster without
// agent-sandbox's CRDs.
var ErrNoAgentSandbox = errors.New("k8s: agent-sandbox is not installed")

// asErr wraps a failed agent-sandbox call; a resource the server does not
// know is a configuration error naming the CRD and how to install it.
func asErr(what, resource string, err error) error {
	if apierrors.IsNotFound(err) && isNoResource(err) {
		return ops.ConfigError("k8s: %s: the cluster has no CRD %s: %w (install agent-sandbox v1.0.1's CRDs and run its controller with --extensions; make cluster does both, see docs/pools.md)",
			what, asResources[resource], ErrNoAgentSandbox)
	}
	return apiErr(what, err)
}

// noObject reports whether err is a 404 for an object of a resource the
// server serves (not the "no such resource type" of a missing CRD).
func noObject(err error) bool { return apierrors.IsNotFound(err) && !isNoResource(err) }

// asEnsure creates want unless an object of its name exists; an existing
// one that differs (same, reading cur, says so) is replaced by want. It
// reports whether it replaced one.
func (c *Client) asEnsure(ctx context.Context, resource, what string, want, cur asObject, same func() bool) (bool, error) {
	switch err := c.asGet(ctx, resource, want.GetName(), cur); {
	case noObject(err):
		if err := c.asCreate(ctx, resource, want, cur); err != nil {
			return false, asErr("create "+what, resource, err)
		}
		return false, nil
	case err != nil:
		return false, asErr("get "+what, resource, err)
	case same():
		return false, nil
	}
	want.SetResourceVersion(cur.GetResourceVersion())
	if err := c.asUpdate(ctx, resource, want, cur); err != nil {
		return false, asErr("update "+what, resource, err)
	}
	return true, nil
}

// isNoResource reports whether a 404 is the server's "no such resource
// type" (rather than "no such object").
func isNoResource(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d == nil || d.Name == "" || strings.Contains(se.Status().Message, "the server could not find the requested resource")
}

// asObject is one of the agent-sandbox types.
type asObject interface {
	runtime.Object
	metav1.Object
}

func (c *Client) asGet(ctx context.Context, resource, name string, out asObject) error {
	rc, err := c.asClient(resource)
	if err != nil {
		return err
	}
	return rc.Get().Namespace(c.Namespace).Resource(resource).Name(name).Do(ctx).Into(out)
}

func (c *Client) asCreate(ctx context.Context, resource string, obj, out asObject) error {
	rc, err := c.asClient(resource)
	if err != nil {
		return err
	}
	return rc.Post().Namespace(c.Namespace).Resource(resource).Body(obj).Do(ctx).Into(out)
}

func (c *Client) asUpdate(ctx context.Context, resource string, obj, out asObject) error {
	rc, err := c.asClient(resource)
	if err != nil {
		return err
	}
	return rc.Put().Namespace(c.Namespace).Resource(resource).Name(obj.GetName()).Body(obj).Do(ctx).Into(out)
}

func (c *Client) asList(ctx context.Context, resource, selector string, out runtime.Object) error {
	rc, err := c.asClient(resource)
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{LabelSelector: selector}
	return rc.Get().Namespace(c.Namespace).Resource(resource).VersionedParams(&opts, asParams).Do(ctx).Into(out)
}

func (c *Client) asDelete(ctx context.Context, resource, name string) error {
	rc, err := c.asClient(resource)
	if err != nil {
		return err
	}
	fg := metav1.DeletePropagationForeground
	return rc.Delete().Namespace(c.Namespace).Resource(resource).Name(name).Body(&metav1.DeleteOptions{PropagationPolicy: &fg}).Do(ctx).Error()
}

func (c *Client) asClient(resource string) (*rest.RESTClient, error) {
	as, err := c.agentSandbox()
	if err != nil {
		return nil, fmt.Errorf("k8s: client: %w", err)
	}
	if resource == "sandboxes" {
		return as.sandboxes, nil
	}
	return as.ext, nil
}

// patchPodMeta merges labels and annotations into a pod's (a nil map
// changes nothing: in a merge patch null would remove them all).
func (c *Client) patchPodMeta(ctx context.Context, pod string, labels, annotations map[string]string) error {
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	return c.api.core.Patch(types.MergePatchType).Namespace(c.Namespace).Resource("pods").Name(pod).Body(body).Do(ctx).Error()
}
