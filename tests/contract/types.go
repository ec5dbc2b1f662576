// The execution contract's types, declared from the facts of zero's
// execution contract: field names, JSON types and omitempty as
// zero's own Go types have them, and zero's validation rules.
package main

import (
	"errors"
	"fmt"
	"strings"
)

type Capability struct {
	Kind  string `json:"kind"`
	Scope string `json:"scope,omitempty"`
}

type Command struct {
	Name string   `json:"name"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
}

type Approval struct {
	SessionID     string `json:"sessionId,omitempty"`
	PolicyVersion int    `json:"policyVersion"`
}

type Request struct {
	Origin           string       `json:"origin"`
	Mode             string       `json:"mode"`
	Command          Command      `json:"command"`
	WorkingDirectory string       `json:"workingDirectory"`
	WorkspaceRoots   []string     `json:"workspaceRoots"`
	Capabilities     []Capability `json:"capabilities,omitempty"`
	Approval         Approval     `json:"approval"`
}

type Exit struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
}

type Denial struct {
	Capability  Capability `json:"capability"`
	Source      string     `json:"source"`
	Reason      string     `json:"reason"`
	Recoverable bool       `json:"recoverable"`
	NextAction  string     `json:"nextAction"`
}

type Enforcement struct {
	Backend         string `json:"backend,omitempty"`
	Level           string `json:"level,omitempty"`
	Degraded        bool   `json:"degraded,omitempty"`
	DowngradeReason string `json:"downgradeReason,omitempty"`
}

type Change struct {
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Aggregated bool   `json:"aggregated,omitempty"`
	Count      int    `json:"count,omitempty"`
}

type Outcome struct {
	State       string      `json:"state"`
	Kind        string      `json:"kind"`
	ProcessID   string      `json:"processId,omitempty"`
	Exit        *Exit       `json:"exit,omitempty"`
	Denial      *Denial     `json:"denial,omitempty"`
	Enforcement Enforcement `json:"enforcement"`
	Changes     []Change    `json:"changes,omitempty"`
}

var (
	origins         = []string{"interactive_command", "hook", "plugin", "mcp_server", "background_task"}
	modes           = []string{"captured", "interactive", "durable"}
	capabilityKinds = []string{"filesystem_read", "workspace_write", "protected_metadata",
		"external_network", "isolated_loopback", "host_visible_binding", "process_spawn",
		"process_control", "environment", "unrestricted"}
	sources     = []string{"configured_policy", "platform_sandbox", "approval"}
	nextActions = []string{"none", "request_approval", "change_command", "enable_sandbox"}
	kinds       = []string{"running", "success", "policy_denied", "enforcement_denied",
		"application_failure", "sandbox_setup_failure", "executable_not_found", "cancelled",
		"timed_out", "enforcement_degraded"}
	changeKinds = []string{"created", "modified", "deleted"}
)

func known(v string, set []string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

func (r Request) Validate() error {
	if !known(r.Origin, origins) {
		return fmt.Errorf("unknown origin %q", r.Origin)
	}
	if !known(r.Mode, modes) {
		return fmt.Errorf("unknown mode %q", r.Mode)
	}
	if blank(r.Command.Name) {
		return errors.New("blank command name")
	}
	if blank(r.WorkingDirectory) {
		return errors.New("blank working directory")
	}
	if len(r.WorkspaceRoots) == 0 {
		return errors.New("no workspace root")
	}
	for _, root := range r.WorkspaceRoots {
		if blank(root) {
			return errors.New("blank workspace root")
		}
	}
	for _, c := range r.Capabilities {
		if !known(c.Kind, capabilityKinds) {
			return fmt.Errorf("unknown capability kind %q", c.Kind)
		}
	}
	return nil
}

func (d *Denial) validate() error {
	if !known(d.Capability.Kind, capabilityKinds) {
		return fmt.Errorf("denial: unknown capability kind %q", d.Capability.Kind)
	}
	if blank(d.Source) || blank(d.Reason) || blank(d.NextAction) {
		return errors.New("denial: blank source, reason or nextAction")
	}
	if !known(d.Source, sources) || !known(d.NextAction, nextActions) {
		return fmt.Errorf("denial: unknown source %q or next action %q", d.Source, d.NextAction)
	}
	return nil
}

func (o Outcome) Validate() error {
	if o.State == "" || o.Kind == "" {
		return errors.New("state and kind must both be set")
	}
	if !known(o.Kind, kinds) {
		return fmt.Errorf("unknown kind %q", o.Kind)
	}
	for _, c := range o.Changes {
		if c.Path == "" || !known(c.Kind, changeKinds) {
			return fmt.Errorf("bad change %+v", c)
		}
	}
	switch o.State {
	case "running", "retained":
		if o.Kind != "running" || blank(o.ProcessID) {
			return fmt.Errorf("state %s needs kind running and a processId", o.State)
		}
	case "completed":
		if o.Kind != "success" || o.Exit == nil || o.Exit.Code != 0 {
			return errors.New("completed needs kind success and exit code 0")
		}
	case "denied":
		if o.Kind != "policy_denied" && o.Kind != "enforcement_denied" {
			return fmt.Errorf("denied with kind %s", o.Kind)
		}
		if o.Denial == nil {
			return errors.New("denied without a denial")
		}
		return o.Denial.validate()
	case "failed":
		if o.Kind == "running" || o.Kind == "success" || o.Exit == nil {
			return fmt.Errorf("failed with kind %s or without exit", o.Kind)
		}
	case "cancelled":
		if o.Kind != "cancelled" {
			return errors.New("cancelled needs kind cancelled")
		}
	default:
		return fmt.Errorf("state %q is not an outcome", o.State)
	}
	return nil
}
