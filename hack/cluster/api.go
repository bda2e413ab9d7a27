package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"time"
)

// apiClient is the little of the Kubernetes API the harness needs, over plain HTTPS with
// the admin token (the main module carries no client-go).
type apiClient struct {
	base, token string
	hc          *http.Client
}

func newAPIClient(l layout) (*apiClient, error) {
	ca, err := os.ReadFile(l.pki("ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	kc, err := os.ReadFile(l.kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	m := regexp.MustCompile(`(?m)^\s+token: (\S+)$`).FindSubmatch(kc)
	if m == nil {
		return nil, fmt.Errorf("cluster: no token in %s", l.kubeconfig())
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &apiClient{
		base: fmt.Sprintf("https://127.0.0.1:%d", apiPort), token: string(m[1]),
		hc: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool}, Proxy: nil,
		}},
	}, nil
}

// do sends a request and decodes a 2xx JSON answer into out (when non-nil).
func (c *apiClient) do(method, path string, out any) error {
	return c.send(method, path, "", nil, out)
}

// send is do with a request body of the given content type.
func (c *apiClient) send(method, path, contentType string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, answer)
	}
	if out != nil {
		return json.Unmarshal(answer, out)
	}
	return nil
}

func (c *apiClient) readyz() error { return c.do("GET", "/readyz", nil) }

// nodeReady reports nil once the node's Ready condition is True.
func (c *apiClient) nodeReady() error {
	status, msg, err := c.condition("/api/v1/nodes/"+nodeName, "Ready")
	switch {
	case err != nil:
		return err
	case status == "True":
		return nil
	case status == "":
		return fmt.Errorf("node %s has no Ready condition yet", nodeName)
	}
	return fmt.Errorf("node %s not Ready: %s", nodeName, msg)
}

// condition returns the status and message of the condition typ of the
// object at path (status "" when it has none).
func (c *apiClient) condition(path, typ string) (status, msg string, err error) {
	var obj struct {
		Status struct {
			Conditions []struct{ Type, Status, Message string }
		}
	}
	if err := c.do("GET", path, &obj); err != nil {
		return "", "", err
	}
	for _, cond := range obj.Status.Conditions {
		if cond.Type == typ {
			return cond.Status, cond.Message, nil
		}
	}
	return "", "", nil
}

type podRef struct{ Namespace, Name string }

func (c *apiClient) pods() ([]podRef, error) {
	var list struct {
		Items []struct {
			Metadata podRef
		}
	}
	if err := c.do("GET", "/api/v1/pods", &list); err != nil {
		return nil, err
	}
	var refs []podRef
	for _, it := range list.Items {
		refs = append(refs, it.Metadata)
	}
	return refs, nil
}

func (c *apiClient) deletePod(p podRef) error {
	return c.do("DELETE", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=1", p.Namespace, p.Name), nil)
}

// applyCRD creates or updates a CustomResourceDefinition by server-side apply of its YAML
// manifest, owned by the field manager pi-sandbox-cluster.
func (c *apiClient) applyCRD(name string, manifest []byte) error {
	return c.send("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name+
		"?fieldManager=pi-sandbox-cluster&force=true", "application/apply-patch+yaml", manifest, nil)
}

// crdEstablished reports nil once the CustomResourceDefinition's Established condition is
// True, that is once its resources are served.
func (c *apiClient) crdEstablished(name string) error {
	status, _, err := c.condition("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, "Established")
	if err != nil {
		return err
	}
	if status != "True" {
		return fmt.Errorf("CustomResourceDefinition %s not Established yet", name)
	}
	return nil
}
