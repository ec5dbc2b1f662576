// contract: corral against zero's execution contract, from outside.
// Requests marshalled with zero's types run through `corral run
// --request`; every outcome corral produces (each kind, a live MCP
// session, an exec report) must decode into zero's types and pass zero's
// rules.  Usage: CORRAL=path/to/corral contract
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var (
	corral   = os.Getenv("CORRAL")
	failures = 0
	passes   = 0
	scratch  string
)

func check(name string, ok bool, format string, args ...interface{}) {
	if ok {
		passes++
		return
	}
	failures++
	fmt.Fprintf(os.Stderr, "FAIL: %s: %s\n", name, fmt.Sprintf(format, args...))
}

// decode is what zero does with an outcome: ordinary decoding into its
// types, then its rules.  `enforcement` is always written by zero, so its
// absence is a mismatch even though decoding would not notice.
func decode(raw []byte) (Outcome, error) {
	var keys map[string]json.RawMessage
	var o Outcome
	if err := json.Unmarshal(raw, &keys); err != nil {
		return o, err
	}
	if _, ok := keys["enforcement"]; !ok {
		return o, fmt.Errorf("no `enforcement` in %s", raw)
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return o, fmt.Errorf("%v in %s", err, raw)
	}
	return o, o.Validate()
}

type runResult struct {
	outcome Outcome
	err     error
	code    int
	stderr  string
}

// run marshals req, runs it with `corral run --json --request FILE`.
func run(req Request, extra ...string) runResult {
	data, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	f, err := os.CreateTemp(scratch, "request-*.json")
	if err != nil {
		panic(err)
	}
	f.Write(data)
	f.Close()
	args := append([]string{"run", "--json"}, extra...)
	args = append(args, "--request", f.Name())
	return finish(exec.Command(corral, args...), nil)
}

func finish(cmd *exec.Cmd, during func(*exec.Cmd)) runResult {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	r := runResult{}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	if during != nil {
		during(cmd)
	}
	cmd.Wait()
	r.code = cmd.ProcessState.ExitCode()
	r.stderr = errb.String()
	var res struct {
		Outcome json.RawMessage `json:"outcome"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		r.err = fmt.Errorf("corral's result is no JSON (%v): %q %q", err, out.String(), r.stderr)
		return r
	}
	r.outcome, r.err = decode(res.Outcome)
	return r
}

func request(ws string, name string, args ...string) Request {
	return Request{Origin: "interactive_command", Mode: "captured",
		Command:          Command{Name: name, Args: args},
		WorkingDirectory: ws, WorkspaceRoots: []string{ws}, Approval: Approval{PolicyVersion: 1}}
}

func expectKind(name string, r runResult, state, kind string) {
	check(name, r.err == nil, "%v (stderr %q)", r.err, r.stderr)
	check(name, r.outcome.State == state && r.outcome.Kind == kind,
		"want %s/%s, got %s/%s (stderr %q)", state, kind, r.outcome.State, r.outcome.Kind, r.stderr)
}

func mkdir(parts ...string) string {
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		panic(err)
	}
	return p
}

func requests(ws string) {
	for _, origin := range origins {
		req := request(ws, "true")
		req.Origin = origin
		expectKind("origin "+origin, run(req), "completed", "success")
	}
	for _, mode := range []string{"interactive", "durable"} {
		req := request(ws, "true")
		req.Mode = mode
		r := run(req)
		// Decoded and validated; refused by `run` only for what it cannot do.
		check("mode "+mode, r.code == 2 && strings.Contains(r.stderr, "mode `"+mode+"`"),
			"exit %d, stderr %q", r.code, r.stderr)
	}
	// Each capability kind, and where it is cheap to see, that it opened
	// what the README says.
	extra := mkdir(scratch, "extra")
	mkdir(ws, "sub")
	for _, kind := range capabilityKinds {
		req := request(ws, "true")
		c := Capability{Kind: kind}
		switch kind {
		case "workspace_write":
			c.Scope = extra
			req.Command = Command{Name: "touch", Args: []string{filepath.Join(extra, "written")}}
		case "protected_metadata":
			c.Scope = filepath.Join(ws, ".agents")
			req.Command = Command{Name: "mkdir", Args: []string{filepath.Join(ws, ".agents")}}
		case "filesystem_read":
			c.Scope = filepath.Join(ws, "sub")
		}
		req.Capabilities = []Capability{c}
		r := run(req)
		expectKind("capability "+kind, r, "completed", "success")
		if kind == "unrestricted" {
			check("capability unrestricted", r.outcome.Enforcement.Degraded,
				"enforcement %+v: running unsandboxed must say so", r.outcome.Enforcement)
		}
	}
	os.Remove(filepath.Join(ws, ".agents"))
	// Environment and several roots.
	ws2 := mkdir(scratch, "second")
	req := request(ws, "sh", "-c", `test "$FOO" = bar && touch "$R2/f"`)
	req.Command.Env = []string{"FOO=bar", "R2=" + ws2, "PATH=/usr/bin:/bin"}
	req.WorkspaceRoots = []string{ws, ws2}
	req.Approval.SessionID = "s-1"
	expectKind("env and two roots", run(req), "completed", "success")
	_, err := os.Stat(filepath.Join(ws2, "f"))
	check("env and two roots", err == nil, "the second root was not writable: %v", err)
	// What an earlier corral wrote is not zero's: policyVersion a string.
	bad := filepath.Join(scratch, "string-version.json")
	os.WriteFile(bad, []byte(`{"origin":"hook","mode":"captured","command":{"name":"true"},`+
		`"workingDirectory":"/","workspaceRoots":["/tmp"],"approval":{"policyVersion":"1"}}`), 0o644)
	r := finish(exec.Command(corral, "run", "--request", bad), nil)
	check("policyVersion as a string", r.code == 2 && strings.Contains(r.stderr, "approval.policyVersion"),
		"exit %d, stderr %q", r.code, r.stderr)
}

func outcomes(ws string) {
	r := run(request(ws, "sh", "-c", "exit 3"))
	expectKind("application failure", r, "failed", "application_failure")
	check("application failure", r.outcome.Exit != nil && r.outcome.Exit.Code == 3, "exit %+v", r.outcome.Exit)
	check("processId", r.outcome.ProcessID != "", "no processId")

	r = run(request(ws, "sh", "-c", "kill -TERM $$"))
	expectKind("signal", r, "failed", "application_failure")
	check("signal", r.outcome.Exit != nil && r.outcome.Exit.Signal == "SIGTERM", "exit %+v", r.outcome.Exit)

	expectKind("not found", run(request(ws, "corral-contract-no-such-command")), "failed",
		"executable_not_found")
	expectKind("timed out", run(request(ws, "sleep", "5"), "--timeout", "0.3"), "failed", "timed_out")

	data, _ := json.Marshal(request(ws, "sleep", "5"))
	file := filepath.Join(scratch, "cancel.json")
	os.WriteFile(file, data, 0o644)
	r = finish(exec.Command(corral, "run", "--json", "--request", file), func(c *exec.Cmd) {
		time.Sleep(500 * time.Millisecond)
		c.Process.Signal(syscall.SIGINT)
	})
	expectKind("cancelled", r, "cancelled", "cancelled")

	r = run(request(ws, "mkdir", filepath.Join(ws, ".agents")))
	expectKind("denied", r, "denied", "enforcement_denied")
	check("denied", r.outcome.Denial != nil && r.outcome.Denial.Capability.Kind == "protected_metadata",
		"denial %+v", r.outcome.Denial)

	// A run ended at a limit: a denial zero's decoder and rules accept.
	r = run(request(ws, "sh", "-c", "while :; do :; done"), "--cpu-time", "0.3")
	expectKind("limit", r, "denied", "enforcement_denied")
	check("limit", r.outcome.Denial != nil && r.outcome.Denial.Capability.Kind == "process_spawn" &&
		r.outcome.Denial.Capability.Scope == "cpu_time" && r.outcome.Denial.Recoverable &&
		r.outcome.Denial.NextAction == "change_command", "denial %+v", r.outcome.Denial)

	policy := filepath.Join(scratch, "too-many.json")
	var deny []string
	for i := 0; i < 1100; i++ {
		deny = append(deny, fmt.Sprintf("/corral-contract-missing-%d", i))
	}
	pdata, _ := json.Marshal(map[string][]string{"denyRead": deny})
	os.WriteFile(policy, pdata, 0o644)
	r = run(request(ws, "true"), "--policy", policy)
	expectKind("setup failure", r, "failed", "sandbox_setup_failure")
	check("setup failure", r.outcome.Exit != nil && r.outcome.Exit.Code == -1, "exit %+v", r.outcome.Exit)

	r = run(request(ws, "sh", "-c", "echo x > made"), "--changes")
	expectKind("changes", r, "completed", "success")
	check("changes", len(r.outcome.Changes) == 1 && r.outcome.Changes[0].Path == "made" &&
		r.outcome.Changes[0].Kind == "created", "changes %+v", r.outcome.Changes)

	report := filepath.Join(scratch, "report.json")
	c := exec.Command(corral, "exec", "--report", report, "--", "sh", "-c", "exit 4")
	c.Dir = ws
	c.Run()
	raw, err := os.ReadFile(report)
	check("exec report", err == nil, "%v", err)
	o, err := decode(raw)
	check("exec report", err == nil && o.State == "failed" && o.Exit != nil && o.Exit.Code == 4,
		"%v %+v", err, o)
}

// A live session through `corral mcp`: zero's shape is state `retained`,
// kind `running`, the session's id as processId.
func session(ws string) {
	c := exec.Command(corral, "mcp")
	c.Dir = ws
	in, _ := c.StdinPipe()
	outPipe, _ := c.StdoutPipe()
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		panic(err)
	}
	lines := bufio.NewScanner(outPipe)
	lines.Buffer(make([]byte, 1<<20), 1<<24)
	send := func(v interface{}) {
		data, _ := json.Marshal(v)
		in.Write(append(data, '\n'))
	}
	answer := func(id int) map[string]interface{} {
		for lines.Scan() {
			var m map[string]interface{}
			if json.Unmarshal(lines.Bytes(), &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
		return nil
	}
	call := func(id int, tool string, args map[string]interface{}) (Outcome, map[string]interface{}, error) {
		send(map[string]interface{}{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]interface{}{"name": tool, "arguments": args}})
		m := answer(id)
		result, _ := m["result"].(map[string]interface{})
		sc, _ := result["structuredContent"].(map[string]interface{})
		if sc == nil {
			return Outcome{}, nil, fmt.Errorf("no structuredContent in %v", m)
		}
		raw, _ := json.Marshal(sc["outcome"])
		o, err := decode(raw)
		return o, sc, err
	}
	send(map[string]interface{}{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]interface{}{"protocolVersion": "2025-06-18",
			"capabilities": map[string]interface{}{}, "clientInfo": map[string]interface{}{"name": "contract", "version": "1"}}})
	answer(1)
	send(map[string]interface{}{"jsonrpc": "2.0", "method": "notifications/initialized"})

	o, sc, err := call(2, "exec_command", map[string]interface{}{"cmd": "sleep 30", "yield_time_ms": 300})
	check("retained session", err == nil, "%v", err)
	sid, _ := sc["sessionId"].(float64)
	check("retained session", o.State == "retained" && o.Kind == "running" &&
		o.ProcessID == fmt.Sprint(int64(sid)), "outcome %+v, session %v", o, sc["sessionId"])
	call(3, "stop_session", map[string]interface{}{"session_id": int64(sid)})

	o, _, err = call(4, "exec_command", map[string]interface{}{"cmd": "true"})
	check("finished session", err == nil && o.State == "completed", "%v %+v", err, o)
	in.Close()
	c.Wait()
}

func main() {
	if corral == "" {
		fmt.Fprintln(os.Stderr, "contract: set CORRAL to the corral binary")
		os.Exit(2)
	}
	var err error
	if scratch, err = os.MkdirTemp("", "corral-contract-"); err != nil {
		panic(err)
	}
	defer os.RemoveAll(scratch)
	ws := mkdir(scratch, "ws")
	requests(ws)
	outcomes(ws)
	session(ws)
	fmt.Printf("%d passed, %d failed\n", passes, failures)
	if failures > 0 {
		os.Exit(1)
	}
}
