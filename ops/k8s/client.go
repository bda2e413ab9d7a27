package k8s

import (
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Client is a connection to one cluster and namespace, for the functions
// that work on pods without a backend (Up, Down, List, GC, Doctor).
type Client struct {
	REST      *rest.Config
	Namespace string
	// Context is the kubeconfig context used ("" with Config.REST).
	Context string

	api *api

	asOnce sync.Once // the agent-sandbox clients (agentsandbox_api.go)
	as     *asClients
	asErr  error
}

// NewClient loads the cluster configuration of cfg (Kubeconfig, Context,
// Namespace, REST); nothing is contacted yet.
func NewClient(cfg Config) (*Client, error) {
	rc, ns, ctxName := cfg.REST, cfg.Namespace, ""
	if rc == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if cfg.Kubeconfig != "" {
			rules.ExplicitPath = cfg.Kubeconfig
		}
		over := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
		var err error
		if rc, err = cc.ClientConfig(); err != nil {
			return nil, fmt.Errorf("k8s: kubeconfig: %w", err)
		}
		if ns == "" {
			if ns, _, err = cc.Namespace(); err != nil {
				return nil, fmt.Errorf("k8s: kubeconfig namespace: %w", err)
			}
		}
		if raw, err := cc.RawConfig(); err == nil {
			ctxName = raw.CurrentContext
			if cfg.Context != "" {
				ctxName = cfg.Context
			}
		}
	} else {
		rc = rest.CopyConfig(rc)
	}
	if ns == "" {
		ns = "default"
	}
	rc.UserAgent = "pi-sandbox"
	// The helper's exec is long-lived: no client-side timeout on requests;
	// each call bounds itself by its context.
	rc.Timeout = 0
	a, err := newAPI(rc, ns)
	if err != nil {
		return nil, fmt.Errorf("k8s: client: %w", err)
	}
	return &Client{REST: rc, Namespace: ns, Context: ctxName, api: a}, nil
}

// apiErr wraps a failed API call: it never looks like a file error, and
// errors.Is(err, ops.ErrTransport) holds.
func apiErr(what string, err error) error {
	return fmt.Errorf("k8s: %s: %w: %w", what, ops.ErrTransport, err)
}
