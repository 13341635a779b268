package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// runAsUser is the numeric user of the image and of the pods.
const runAsUser = 10001

// The Kubernetes manifests are decoded the way the API server's strict
// field validation reads them: the upstream types (k8s.io/api), every
// field known, no key given twice. kubeconform would check the same
// against JSON schemas generated from those types, which it downloads;
// the types themselves need no network.

// decodeManifest decodes every document of a manifest file strictly into
// the apps/v1 and batch/v1 types, the only kinds the recipes use.
func decodeManifest(t *testing.T, file string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeStrict(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return objs
}

func decodeStrict(b []byte) ([]runtime.Object, error) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []runtime.Object
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if isBlankYAML(doc) {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		objs = append(objs, obj)
	}
}

func isBlankYAML(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}

// TestStrictDecodingCatches feeds the decoder a misspelt field, a key
// given twice and a kind the recipes do not use, so a decoder that
// accepted anything would fail here.
func TestStrictDecodingCatches(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n",
		"duplicate key": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  parallelism: 2\n  parallelism: 3\n",
		"unknown kind":  "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringData: {token: x}\n",
		"wrong type":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: two\n",
	} {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: the strict decoder accepted\n%s", name, doc)
		}
	}
	good := "# a comment\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 2\n"
	if objs, err := decodeStrict([]byte(good)); err != nil || len(objs) != 1 {
		t.Errorf("the strict decoder on a valid manifest: %d objects, %v", len(objs), err)
	}
}

func readDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	objs := decodeManifest(t, deploymentFile)
	if len(objs) != 1 {
		t.Fatalf("%s holds %d objects; want one Deployment", deploymentFile, len(objs))
	}
	d, ok := objs[0].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("%s holds a %T; want a Deployment", deploymentFile, objs[0])
	}
	return d
}

func readJob(t *testing.T) *batchv1.Job {
	t.Helper()
	objs := decodeManifest(t, jobFile)
	if len(objs) != 1 {
		t.Fatalf("%s holds %d objects; want one Job", jobFile, len(objs))
	}
	j, ok := objs[0].(*batchv1.Job)
	if !ok {
		t.Fatalf("%s holds a %T; want a Job", jobFile, objs[0])
	}
	return j
}

func TestDeployment(t *testing.T) {
	d := readDeployment(t)
	checkName(t, deploymentFile, d.Name)
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 1 {
		t.Errorf("the Deployment sets no replicas (the number of runners)")
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		t.Fatal("the Deployment has no selector")
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the selector's %s=%s does not match the pod template's labels %v: the API server refuses it", k, v, d.Spec.Template.Labels)
		}
	}
	checkLabels(t, deploymentFile, d.Labels, d.Spec.Template.Labels)
	if p := d.Spec.Template.Spec.RestartPolicy; p != "" && p != corev1.RestartPolicyAlways {
		t.Errorf("a Deployment's pods restart Always, not %s", p)
	}
	checkPod(t, deploymentFile, d.Spec.Template.Spec, false)
}

func TestJob(t *testing.T) {
	j := readJob(t)
	if j.Name != "" || j.GenerateName == "" {
		t.Errorf("the Job should have a generateName and no name, so each kubectl create is a new run")
	}
	checkName(t, jobFile, j.GenerateName+"abcde")
	if j.Spec.Parallelism == nil || *j.Spec.Parallelism < 1 {
		t.Error("the Job sets no parallelism (the number of runners)")
	}
	if j.Spec.Completions != nil {
		t.Error("the Job sets completions: a work-queue Job leaves it unset, so it ends when its runners have drained the pool")
	}
	checkLabels(t, jobFile, j.Labels, j.Spec.Template.Labels)
	if p := j.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
		t.Errorf("a Job's pods restart OnFailure or Never, not %q", p)
	}
	checkPod(t, jobFile, j.Spec.Template.Spec, true)
}

// TestJobAndDeploymentAgree: the two manifests differ only in what makes
// one a Job (restartPolicy, --once), so a fix to one cannot miss the other.
func TestJobAndDeploymentAgree(t *testing.T) {
	dep := readDeployment(t).Spec.Template.Spec.DeepCopy()
	job := readJob(t).Spec.Template.Spec.DeepCopy()
	job.RestartPolicy = dep.RestartPolicy
	for i, c := range job.Containers {
		if i < len(dep.Containers) && c.Name == "runner" {
			job.Containers[i].Args = slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return a == "--once" })
		}
	}
	if !reflect.DeepEqual(dep, job) {
		t.Error("the Job's pod spec differs from the Deployment's beyond restartPolicy and --once; keep them the same")
	}
}

func checkName(t *testing.T, file, name string) {
	t.Helper()
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Errorf("%s: name %q: %s", file, name, strings.Join(errs, "; "))
	}
}

func checkLabels(t *testing.T, file string, sets ...map[string]string) {
	t.Helper()
	for _, set := range sets {
		for k, v := range set {
			if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
				t.Errorf("%s: label %s=%s: %s", file, k, v, strings.Join(errs, "; "))
			}
		}
	}
}

var secretish = regexp.MustCompile(`(?i)token|key|secret|passw|credential`)

// checkPod holds a runner pod to the recipe's rules: one init container
// that sets up the clone, one runner container running `lazy runner` with
// flags it has (--once exactly when once), non-root and unprivileged,
// bounded resources, writable places for everything that is written, and
// secrets only by reference.
func checkPod(t *testing.T, file string, pod corev1.PodSpec, once bool) {
	t.Helper()
	errorf := func(format string, args ...any) { t.Helper(); t.Errorf(file+": "+format, args...) }

	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		errorf("automountServiceAccountToken must be false: the runner never talks to the cluster")
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != runAsUser ||
		sc.FSGroup == nil || *sc.FSGroup != runAsUser {
		errorf("the pod's securityContext must set runAsNonRoot, runAsUser %d (the image's user) and fsGroup %d (to read the mounted token)", runAsUser, runAsUser)
	}

	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "clone" {
		errorf("want one init container, clone")
		return
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "runner" {
		errorf("want one container, runner: one runner per pod")
		return
	}
	clone, runner := pod.InitContainers[0], pod.Containers[0]

	argv := append(slices.Clone(runner.Command), runner.Args...)
	args, ok := lazyRunnerIn(argv)
	if !ok {
		errorf("the runner container runs %q, not lazy runner", argv)
	} else if flags, err := runnerArgs(args); err != nil {
		errorf("the runner container: %v", err)
	} else if _, has := flags["--once"]; has != once {
		if once {
			errorf("the Job's runner must run with --once, or its pods never end")
		} else {
			errorf("the Deployment's runner must not run with --once: it would exit and be restarted over and over")
		}
	}
	if !slices.Equal(clone.Command, []string{"/bin/sh", "-ec"}) || len(clone.Args) != 1 || !strings.Contains(clone.Args[0], "lazy init") {
		errorf("the clone init container must be /bin/sh -ec SCRIPT with a script that runs lazy init")
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	var home string
	for i, c := range []corev1.Container{clone, runner} {
		if c.Image == "" || c.Image != runner.Image {
			errorf("container %s: the init container and the runner run the same image", c.Name)
		}
		s := c.SecurityContext
		if s == nil || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation ||
			s.Capabilities == nil || !slices.Equal(s.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			errorf("container %s: securityContext must set allowPrivilegeEscalation false and drop ALL capabilities", c.Name)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okReq := c.Resources.Requests[r]
			lim, okLim := c.Resources.Limits[r]
			if !okReq || !okLim {
				errorf("container %s: set both a request and a limit for %s", c.Name, r)
			} else if req.Cmp(lim) > 0 {
				errorf("container %s: %s request %s exceeds its limit %s", c.Name, r, req.String(), lim.String())
			}
		}
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				errorf("container %s mounts volume %s, which the pod does not have", c.Name, m.Name)
			}
		}
		checkEnv(t, file, c, volumes)
		h := envOf(c, "HOME")
		if i == 0 {
			home = h
		} else if h != home {
			errorf("HOME is %q in clone and %q in runner: the runner must see the git config the clone wrote", home, h)
		}
		readOnlyRoot := s != nil && s.ReadOnlyRootFilesystem != nil && *s.ReadOnlyRootFilesystem
		for _, p := range []string{h, c.WorkingDir, envOf(c, "LAZY_REPO_DIR"), "/tmp"} {
			if p != "" && readOnlyRoot && !writable(c, volumes, p) {
				errorf("container %s writes to %s, which is on its read-only root filesystem: mount an emptyDir there", c.Name, p)
			}
		}
	}
	if home == "" {
		errorf("set HOME in both containers: git's global config and the agent's own state live there")
	}
	if repoDir := envOf(clone, "LAZY_REPO_DIR"); repoDir == "" || runner.WorkingDir != repoDir {
		errorf("the runner's workingDir %q must be the clone's LAZY_REPO_DIR %q", runner.WorkingDir, repoDir)
	}
	u, err := url.Parse(envOf(clone, "LAZY_REPO_URL"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		errorf("LAZY_REPO_URL %q is not a URL", envOf(clone, "LAZY_REPO_URL"))
	} else if u.User != nil {
		errorf("LAZY_REPO_URL carries user information; credentials come from the Secret only")
	}
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkEnv: a variable whose name says secret comes from a Secret, or (a
// *_FILE variable) names a file of a mounted Secret; every Secret is the
// one the set-up creates, mounted read-only.
func checkEnv(t *testing.T, file string, c corev1.Container, volumes map[string]corev1.Volume) {
	t.Helper()
	if len(c.EnvFrom) > 0 {
		t.Errorf("%s: container %s uses envFrom; name each variable, so none reaches the agent by accident", file, c.Name)
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil:
			if ref := e.ValueFrom.SecretKeyRef; ref == nil || ref.Name != secretName {
				t.Errorf("%s: container %s: %s must come from a key of Secret %s", file, c.Name, e.Name, secretName)
			}
		case strings.HasSuffix(e.Name, "_FILE") && secretish.MatchString(e.Name):
			if !inSecretMount(c, volumes, e.Value) {
				t.Errorf("%s: container %s: %s=%s is not a file of a mounted Secret", file, c.Name, e.Name, e.Value)
			}
		case secretish.MatchString(e.Name) && e.Name != "GIT_USERNAME":
			t.Errorf("%s: container %s: %s has its value inline; take it from Secret %s (secretKeyRef)", file, c.Name, e.Name, secretName)
		}
	}
	for _, m := range c.VolumeMounts {
		if v := volumes[m.Name]; v.Secret != nil {
			if v.Secret.SecretName != secretName {
				t.Errorf("%s: volume %s mounts Secret %s; the set-up creates %s", file, m.Name, v.Secret.SecretName, secretName)
			}
			if !m.ReadOnly {
				t.Errorf("%s: container %s mounts Secret volume %s writable", file, c.Name, m.Name)
			}
			if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440 {
				t.Errorf("%s: Secret volume %s must have defaultMode 0440: readable by the runner's group (fsGroup), by no one else", file, m.Name)
			}
		}
	}
}

const secretName = "lazy-runner"

// mountOf is the mount of c that holds the absolute path p.
func mountOf(c corev1.Container, p string) (corev1.VolumeMount, bool) {
	var best corev1.VolumeMount
	found := false
	for _, m := range c.VolumeMounts {
		mp := path.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) >= len(best.MountPath) {
			best, found = m, true
		}
	}
	return best, found
}

func writable(c corev1.Container, volumes map[string]corev1.Volume, p string) bool {
	m, ok := mountOf(c, path.Clean(p))
	return ok && !m.ReadOnly && volumes[m.Name].EmptyDir != nil
}

func inSecretMount(c corev1.Container, volumes map[string]corev1.Volume, p string) bool {
	m, ok := mountOf(c, path.Clean(p))
	if !ok || volumes[m.Name].Secret == nil {
		return false
	}
	rel := strings.TrimPrefix(path.Clean(p), path.Clean(m.MountPath)+"/")
	for _, it := range volumes[m.Name].Secret.Items {
		if it.Path == rel {
			return true
		}
	}
	return false
}

// TestKubernetesScriptsPassShellcheck runs shellcheck, as POSIX sh, over
// the init container's script of each manifest.
func TestKubernetesScriptsPassShellcheck(t *testing.T) {
	sc := shellcheckPath(t)
	if sc == "" {
		t.Skip("shellcheck is not on PATH (apt-get install shellcheck; scripts/test.sh requires it)")
	}
	for file, pod := range map[string]corev1.PodSpec{
		deploymentFile: readDeployment(t).Spec.Template.Spec,
		jobFile:        readJob(t).Spec.Template.Spec,
	} {
		if len(pod.InitContainers) == 0 || len(pod.InitContainers[0].Args) == 0 {
			t.Fatalf("%s has no init script", file)
		}
		f := filepath.Join(t.TempDir(), "init.sh")
		if err := os.WriteFile(f, []byte(pod.InitContainers[0].Args[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sc, "--shell=sh", "--severity=style", f).CombinedOutput(); err != nil {
			t.Errorf("shellcheck on %s's init script: %v\n%s", file, err, out)
		}
	}
}

const sentinelToken = "ghp_sentinelTOKENnotForArgv0123456789"

// initFixture is the world an init script runs in: a remote with one
// commit, the pod's volumes as temporary directories, and the Secret's
// token as a file.
type initFixture struct {
	root, origin, repo, home, tokenFile string
	env                                 []string
}

// newInitFixture maps the init container's environment onto temporary
// directories: its paths under /work and the Secret's mount are moved
// under the test's directory, the repository URL becomes a local remote.
func newInitFixture(t *testing.T, clone corev1.Container, path string, extra ...string) *initFixture {
	t.Helper()
	root := t.TempDir()
	f := &initFixture{root: root, origin: filepath.Join(root, "origin.git")}
	git(t, nil, "", "init", "-q", "--bare", "-b", "main", f.origin)
	seed := filepath.Join(root, "seed")
	git(t, nil, "", "clone", "-q", f.origin, seed)
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, nil, seed, "add", "README")
	git(t, nil, seed, "-c", "user.name=seed", "-c", "user.email=seed@example.invalid", "commit", "-q", "-m", "seed")
	git(t, nil, seed, "push", "-q", "origin", "HEAD:main")

	remap := func(p string) string {
		for _, prefix := range []string{"/work", "/var/run/secrets"} {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				return filepath.Join(root, "pod", p)
			}
		}
		return p
	}
	var env []string
	for _, e := range clone.Env {
		v := remap(e.Value)
		switch e.Name {
		case "LAZY_REPO_URL":
			v = f.origin
		case "LAZY_REPO_DIR":
			f.repo = v
		case "HOME":
			f.home = v
		case "GIT_TOKEN_FILE":
			f.tokenFile = v
		}
		env = append(env, e.Name+"="+v)
	}
	if f.repo == "" || f.home == "" || f.tokenFile == "" {
		t.Fatal("the init container must set LAZY_REPO_DIR, HOME and GIT_TOKEN_FILE")
	}
	// The pod's volumes: the work volume exists (empty), the Secret's file
	// is there.
	for _, m := range clone.VolumeMounts {
		if err := os.MkdirAll(remap(m.MountPath), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.tokenFile, []byte(sentinelToken+"\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	f.env = append(cleanEnv(f.home, "PATH="+path), env...)
	f.env = append(f.env, extra...)
	return f
}

// run runs the init script as the container does, tracing every git
// command git starts into trace.
func (f *initFixture) run(t *testing.T, script, trace string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Env = append(slices.Clone(f.env), "GIT_TRACE="+trace)
	cmd.Dir = f.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the init script: %v\n%s", err, out)
	}
}

func git(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	if env == nil {
		cmd.Env = cleanEnv(t.TempDir())
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkCloneSetUp asserts what an init script must leave in the pod's
// volume for the runner: the clone, the git identity, a credential helper
// that answers with the Secret's token, lazy's agent list, and the token
// nowhere else.
func checkCloneSetUp(t *testing.T, f *initFixture, clone corev1.Container, traces ...string) {
	t.Helper()
	if got, want := git(t, f.env, f.repo, "rev-parse", "HEAD"), git(t, f.env, f.origin, "rev-parse", "main"); got != want {
		t.Errorf("the clone is at %s; the remote's main is %s", got, want)
	}
	for key, env := range map[string]string{"user.name": "GIT_USER_NAME", "user.email": "GIT_USER_EMAIL"} {
		if got := git(t, f.env, f.repo, "config", "--global", key); got != envOf(clone, env) {
			t.Errorf("git %s is %q; want the manifest's %s %q", key, got, env, envOf(clone, env))
		}
	}
	if got := git(t, f.env, f.repo, "config", "--local", "lazy.runner.agents"); got != envOf(clone, "LAZY_RUNNER_AGENTS") {
		t.Errorf("lazy.runner.agents is %q; want %q", got, envOf(clone, "LAZY_RUNNER_AGENTS"))
	}

	// git asks the helper for an https remote's password: the Secret's token.
	helperTrace := filepath.Join(t.TempDir(), "helper-trace")
	traces = append(traces, helperTrace)
	fill := exec.Command("git", "credential", "fill")
	fill.Env, fill.Dir = append(slices.Clone(f.env), "GIT_TRACE="+helperTrace), f.repo
	fill.Stdin = strings.NewReader("protocol=https\nhost=git.example.invalid\npath=owner/repo.git\n\n")
	out, err := fill.CombinedOutput()
	if err != nil {
		t.Fatalf("git credential fill: %v\n%s", err, out)
	}
	for _, want := range []string{"username=" + envOf(clone, "GIT_USERNAME"), "password=" + sentinelToken} {
		if !slices.Contains(strings.Split(string(out), "\n"), want) {
			t.Errorf("git credential fill gave\n%s\nwant the line %q", out, want)
		}
	}
	// After a push git tells the helper the credential worked; it must
	// accept that quietly (it has nothing to store).
	approve := exec.Command("git", "credential", "approve")
	approve.Env, approve.Dir = append(slices.Clone(f.env), "GIT_TRACE="+helperTrace), f.repo
	approve.Stdin = strings.NewReader(string(out) + "\n")
	if out, err := approve.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("git credential approve: %v %s", err, out)
	}

	// The token is in no argument git ran (the helper's included), and in
	// no config file.
	for _, p := range append(traces, filepath.Join(f.home, ".gitconfig"), filepath.Join(f.repo, ".git", "config")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(sentinelToken)) {
			t.Errorf("the git token appears in %s", filepath.Base(p))
		}
	}
}

// TestKubernetesInitScript runs each manifest's init script with real git
// and a fake lazy, twice (a restarted pod runs it again on the volume it
// left), and checks what it leaves for the runner.
func TestKubernetesInitScript(t *testing.T) {
	for file, pod := range map[string]corev1.PodSpec{
		deploymentFile: readDeployment(t).Spec.Template.Spec,
		jobFile:        readJob(t).Spec.Template.Spec,
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if len(pod.InitContainers) == 0 || len(pod.InitContainers[0].Args) == 0 {
				t.Fatalf("%s has no init script", file)
			}
			clone, script := pod.InitContainers[0], pod.InitContainers[0].Args[0]
			bin, log := fakeLazyDir(t)
			f := newInitFixture(t, clone, bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_LAZY_LOG="+log)

			trace1 := filepath.Join(f.root, "trace1")
			f.run(t, script, trace1)
			checkCloneSetUp(t, f, clone, trace1, log)

			// The remote moves on; the pod restarts and runs the script again.
			seed := filepath.Join(f.root, "seed")
			git(t, nil, seed, "-c", "user.name=seed", "-c", "user.email=seed@example.invalid", "commit", "-q", "--allow-empty", "-m", "more")
			git(t, nil, seed, "push", "-q", "origin", "HEAD:main")
			trace2 := filepath.Join(f.root, "trace2")
			f.run(t, script, trace2)
			checkCloneSetUp(t, f, clone, trace2, log)
			if got, want := git(t, f.env, f.repo, "rev-parse", "origin/main"), git(t, f.env, f.origin, "rev-parse", "main"); got != want {
				t.Errorf("the second run left origin/main at %s; the remote's main is %s (it should fetch)", got, want)
			}

			calls := readLazyCalls(t, log)
			if len(calls) != 2 {
				t.Fatalf("lazy ran %d times over two runs: %v", len(calls), calls)
			}
			for _, c := range calls {
				if !slices.Equal(c.Args, []string{"init"}) || c.Dir != f.repo {
					t.Errorf("lazy ran %q in %s; want lazy init in the clone %s", c.Args, c.Dir, f.repo)
				}
			}
		})
	}
}

// TestKubernetesInitScriptWithLazy runs the Deployment's init script with
// the real lazy against a remote that already has a task: the clone it
// leaves is set up (host id, agents) and has taken the task in.
func TestKubernetesInitScriptWithLazy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lazy")
	}
	lazyDir := buildLazy(t)
	lazy := filepath.Join(lazyDir, "lazy")
	pod := readDeployment(t).Spec.Template.Spec
	clone, script := pod.InitContainers[0], pod.InitContainers[0].Args[0]
	f := newInitFixture(t, clone, lazyDir+string(os.PathListSeparator)+os.Getenv("PATH"))

	// Another machine put a task on the remote.
	seedHome := t.TempDir()
	seedEnv := cleanEnv(seedHome, "GIT_AUTHOR_NAME=seed", "GIT_AUTHOR_EMAIL=seed@example.invalid",
		"GIT_COMMITTER_NAME=seed", "GIT_COMMITTER_EMAIL=seed@example.invalid")
	seed := filepath.Join(f.root, "seed")
	for _, args := range [][]string{
		{"init"},
		{"create", "Fix the login form", "-m", "The form rejects valid e-mail addresses."},
		{"push", "origin"},
	} {
		cmd := exec.Command(lazy, args...)
		cmd.Dir, cmd.Env = seed, seedEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("lazy %q in the seed clone: %v\n%s", args, err, out)
		}
	}

	trace := filepath.Join(f.root, "trace")
	f.run(t, script, trace)
	checkCloneSetUp(t, f, clone, trace)
	if id := git(t, f.env, f.repo, "config", "--local", "lazy.hostid"); id == "" {
		t.Error("lazy init left no lazy.hostid in the clone")
	}
	list := exec.Command(lazy, "list", "--json")
	list.Dir, list.Env = f.repo, f.env
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("lazy list in the clone: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Fix the login form") {
		t.Errorf("the clone did not take in the remote's task; lazy list --json:\n%s", out)
	}
}
