package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// scaledJob is KEDA's ScaledJob (keda.sh/v1alpha1), its fields as KEDA's
// scaledjob_types.go names them, decoded strictly: a misspelt field is
// an error here, as the API server's strict validation of the CRD would
// make it. The Job it starts is the upstream batch/v1 JobSpec.
type scaledJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		JobTargetRef               *batchv1.JobSpec `json:"jobTargetRef"`
		PollingInterval            *int32           `json:"pollingInterval,omitempty"`
		SuccessfulJobsHistoryLimit *int32           `json:"successfulJobsHistoryLimit,omitempty"`
		FailedJobsHistoryLimit     *int32           `json:"failedJobsHistoryLimit,omitempty"`
		EnvSourceContainerName     string           `json:"envSourceContainerName,omitempty"`
		MinReplicaCount            *int32           `json:"minReplicaCount,omitempty"`
		MaxReplicaCount            *int32           `json:"maxReplicaCount,omitempty"`
		Rollout                    *struct {
			Strategy          string `json:"strategy,omitempty"`
			PropagationPolicy string `json:"propagationPolicy,omitempty"`
		} `json:"rollout,omitempty"`
		ScalingStrategy *struct {
			Strategy                          string   `json:"strategy,omitempty"`
			CustomScalingQueueLengthDeduction *int32   `json:"customScalingQueueLengthDeduction,omitempty"`
			CustomScalingRunningJobPercentage string   `json:"customScalingRunningJobPercentage,omitempty"`
			PendingPodConditions              []string `json:"pendingPodConditions,omitempty"`
			MultipleScalersCalculation        string   `json:"multipleScalersCalculation,omitempty"`
		} `json:"scalingStrategy,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
			MetricType string `json:"metricType,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

// metricsAPIKeys are the metadata keys KEDA's metrics-api scaler reads.
var metricsAPIKeys = []string{"url", "format", "valueLocation", "targetValue", "activationTargetValue", "unsafeSsl",
	"authMode", "method", "keyParamName", "aggregateFromKubeServiceEndpoints", "aggregationType"}

// kedaRecipe is lazy-runner-keda.yaml: the Deployment and Service that
// serve the figure, and the ScaledJob that reads it.
type kedaRecipe struct {
	metrics *appsv1.Deployment
	service *corev1.Service
	job     *scaledJob
}

func decodeKEDA(b []byte) (*kedaRecipe, error) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	k := &kedaRecipe{}
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if isBlankYAML(doc) {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if head.APIVersion == "keda.sh/v1alpha1" && head.Kind == "ScaledJob" && k.job == nil {
			k.job = &scaledJob{}
			if err := yaml.UnmarshalStrict(doc, k.job); err != nil {
				return nil, fmt.Errorf("document %d (ScaledJob): %w", n, err)
			}
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			if k.metrics != nil {
				return nil, fmt.Errorf("document %d: a second Deployment", n)
			}
			k.metrics = o
		case *corev1.Service:
			if k.service != nil {
				return nil, fmt.Errorf("document %d: a second Service", n)
			}
			k.service = o
		default:
			return nil, fmt.Errorf("document %d: a %T, not one of the recipe's kinds", n, obj)
		}
	}
	if k.metrics == nil || k.service == nil || k.job == nil {
		return nil, errors.New("want a Deployment, a Service and a ScaledJob")
	}
	return k, nil
}

func readKEDA(t *testing.T) *kedaRecipe {
	t.Helper()
	b, err := os.ReadFile(kedaFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := decodeKEDA(b)
	if err != nil {
		t.Fatalf("%s: %v", kedaFile, err)
	}
	return k
}

// TestKEDADecodingCatches: the ScaledJob decoder refuses a misspelt
// field, in KEDA's part and in the Job's.
func TestKEDADecodingCatches(t *testing.T) {
	b, err := os.ReadFile(kedaFile)
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{
		"  pollingInterval:":     "  pollInterval:",
		"    parallelism: 1":     "    paralelism: 1",
		"    strategy: accurate": "    strategy: accurate\n    strategy: default",
		"kind: Service":          "kind: Secret",
	} {
		if !bytes.Contains(b, []byte(from)) {
			t.Fatalf("%s has no %q", kedaFile, from)
		}
		if _, err := decodeKEDA(bytes.Replace(b, []byte(from), []byte(to), 1)); err == nil {
			t.Errorf("the decoder accepted %s with %q for %q", kedaFile, to, from)
		}
	}
}

// TestKEDAScaledJob: one runner per Job, the Job's pod the same as
// lazy-runner-job.yaml's, and one metrics-api trigger that reads
// waiting_count (the field lazy pool --json documents) from the Service.
func TestKEDAScaledJob(t *testing.T) {
	k := readKEDA(t)
	sj := k.job
	checkName(t, kedaFile, sj.Metadata.Name)
	spec := sj.Spec.JobTargetRef
	if spec == nil {
		t.Fatal("the ScaledJob has no jobTargetRef")
	}
	if spec.Parallelism == nil || *spec.Parallelism != 1 || spec.Completions != nil {
		t.Error("each Job KEDA starts is one runner: parallelism 1, completions unset")
	}
	if spec.ActiveDeadlineSeconds == nil {
		t.Error("the Job sets no activeDeadlineSeconds: a hung turn would keep a runner forever")
	}
	checkLabels(t, kedaFile, sj.Metadata.Labels, spec.Template.Labels)
	checkPod(t, kedaFile, spec.Template.Spec, true)
	if job := readJob(t); !reflect.DeepEqual(job.Spec.Template, spec.Template) {
		t.Errorf("the ScaledJob's pod template differs from %s's; keep them the same", jobFile)
	}
	if m := sj.Spec.MaxReplicaCount; m == nil || *m < 1 {
		t.Error("the ScaledJob sets no maxReplicaCount: the number of runners would be unbounded")
	}
	if p := sj.Spec.PollingInterval; p == nil || *p < 5 {
		t.Error("the ScaledJob's pollingInterval must be set, at least 5 s (each poll runs no git, but the figure is refreshed every 30 s)")
	}
	if s := sj.Spec.ScalingStrategy; s == nil || s.Strategy != "accurate" {
		t.Error(`scalingStrategy must be "accurate": the figure leaves out the tasks running Jobs hold`)
	}

	if len(sj.Spec.Triggers) != 1 {
		t.Fatalf("the ScaledJob has %d triggers; want one, metrics-api", len(sj.Spec.Triggers))
	}
	tr := sj.Spec.Triggers[0]
	if tr.Type != "metrics-api" {
		t.Fatalf("trigger type %q, want metrics-api", tr.Type)
	}
	for key, v := range tr.Metadata {
		if !slices.Contains(metricsAPIKeys, key) {
			t.Errorf("trigger metadata %s: the metrics-api scaler has no such key (%s)", key, strings.Join(metricsAPIKeys, " "))
		}
		if secretish.MatchString(key+" "+v) && key != "valueLocation" {
			t.Errorf("trigger metadata %s=%s looks like a credential: use an authenticationRef by name", key, v)
		}
	}
	if f := tr.Metadata["format"]; f != "" && f != "json" {
		t.Errorf("trigger format %q; the metrics pod serves json", f)
	}
	if got := tr.Metadata["valueLocation"]; got != "waiting_count" {
		t.Errorf("valueLocation %q, want waiting_count", got)
	}
	doc, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	_, pool, _ := strings.Cut(string(doc), "## lazy pool --json\n")
	pool, _, _ = strings.Cut(pool, "\n## ")
	if !strings.Contains(pool, "| `waiting_count` | number |") {
		t.Error("docs/json.md's lazy pool --json has no waiting_count, the field the trigger reads")
	}
	if v, err := strconv.ParseFloat(tr.Metadata["targetValue"], 64); err != nil || v <= 0 {
		t.Errorf("targetValue %q must be a positive number", tr.Metadata["targetValue"])
	}
	u, err := url.Parse(tr.Metadata["url"])
	if err != nil || u.Scheme != "http" {
		t.Fatalf("trigger url %q", tr.Metadata["url"])
	}
	host, ns, ok := strings.Cut(u.Hostname(), ".")
	if !ok || host != k.service.Name || !strings.HasSuffix(ns, ".svc.cluster.local") {
		t.Errorf("trigger url host %q is not the Service %s by its full name (KEDA's operator runs in another namespace)", u.Hostname(), k.service.Name)
	}
	if len(k.service.Spec.Ports) != 1 || u.Port() != strconv.Itoa(int(k.service.Spec.Ports[0].Port)) {
		t.Errorf("trigger url port %q is not the Service's", u.Port())
	}
	if u.Path != "/waiting" {
		t.Errorf("trigger url path %q; the metrics pod serves /waiting", u.Path)
	}
}

// TestKEDAMetricsPod: the Service selects the metrics pod and reaches
// its port; the pod sets up its clone as the runners' do, runs lazy pool
// --count in it, and gets the git token only: no agent key.
func TestKEDAMetricsPod(t *testing.T) {
	k := readKEDA(t)
	d := k.metrics
	checkName(t, kedaFile, d.Name)
	checkName(t, kedaFile, k.service.Name)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Error("one metrics pod is enough; set replicas: 1")
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		t.Fatal("the metrics Deployment has no selector")
	}
	for key, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[key] != v {
			t.Errorf("the Deployment's selector %s=%s does not match its pods", key, v)
		}
	}
	if len(k.service.Spec.Selector) == 0 {
		t.Error("the Service selects nothing")
	}
	for key, v := range k.service.Spec.Selector {
		if d.Spec.Template.Labels[key] != v {
			t.Errorf("the Service's selector %s=%s does not match the metrics pods", key, v)
		}
	}
	checkLabels(t, kedaFile, d.Labels, d.Spec.Template.Labels, k.service.Labels)

	pod := d.Spec.Template.Spec
	job := readJob(t).Spec.Template.Spec
	if !reflect.DeepEqual(pod.InitContainers, job.InitContainers) || !reflect.DeepEqual(pod.Volumes, job.Volumes) ||
		!reflect.DeepEqual(pod.SecurityContext, job.SecurityContext) || !reflect.DeepEqual(pod.AutomountServiceAccountToken, job.AutomountServiceAccountToken) {
		t.Errorf("the metrics pod's clone container, volumes and security differ from %s's; keep them the same", jobFile)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "metrics" {
		t.Fatal("want one container, metrics")
	}
	c, clone := pod.Containers[0], pod.InitContainers[0]
	if c.Image != clone.Image {
		t.Error("the metrics container runs another image than the clone")
	}
	if argv := append(slices.Clone(c.Command), c.Args...); len(argv) != 5 || argv[2] != "node" || argv[3] != "-e" {
		t.Fatalf("the metrics container runs %q, want tini -- node -e SCRIPT", argv)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("the metrics container takes %s from elsewhere; it needs no secret but the mounted git token", e.Name)
		}
	}
	checkEnv(t, kedaFile, c, map[string]corev1.Volume{"git-token": pod.Volumes[2]})
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	s := c.SecurityContext
	if s == nil || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation || s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem ||
		s.Capabilities == nil || !slices.Equal(s.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Error("the metrics container: securityContext must forbid privilege escalation, drop ALL and keep the root read-only")
	}
	for _, p := range []string{envOf(c, "HOME"), c.WorkingDir, "/tmp"} {
		if !writable(c, volumes, p) {
			t.Errorf("the metrics container writes to %s (lazy pool pulls into the clone), which no emptyDir holds", p)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("the metrics container sets no %s limit", r)
		}
	}
	if c.WorkingDir != envOf(clone, "LAZY_REPO_DIR") || envOf(c, "HOME") != envOf(clone, "HOME") {
		t.Error("the metrics container must run in the clone the init container made, with its HOME")
	}
	if len(c.Ports) != 1 || strconv.Itoa(int(c.Ports[0].ContainerPort)) != envOf(c, "METRICS_PORT") {
		t.Errorf("the container's port %v is not METRICS_PORT %q", c.Ports, envOf(c, "METRICS_PORT"))
	} else if tp := k.service.Spec.Ports[0].TargetPort; tp.String() != c.Ports[0].Name && tp.IntValue() != int(c.Ports[0].ContainerPort) {
		t.Errorf("the Service's targetPort %s is not the container's port", tp.String())
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/waiting" {
		t.Error("the metrics container is ready once it has a figure: a readinessProbe on /waiting")
	}
}

// TestKEDAMetricsServer runs the metrics pod's script under node, with a
// fake lazy on PATH: it serves {"waiting_count": N} from lazy pool
// --count, and 503, not a stale or garbled figure, when lazy prints
// something else.
func TestKEDAMetricsServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH (the image has it)")
	}
	c := readKEDA(t).metrics.Spec.Template.Spec.Containers[0]
	script := c.Args[len(c.Args)-1]
	for _, tc := range []struct {
		stdout string
		code   int
		body   string
	}{
		{"3\n", 200, `{"waiting_count":3}` + "\n"},
		{"0\n", 200, `{"waiting_count":0}` + "\n"},
		{"3 tasks\n", 503, ""},
		{"99999999999999999999\n", 503, ""},
	} {
		bin, log := fakeLazyDir(t)
		port := freePort(t)
		cmd := exec.Command(node, "-e", script)
		cmd.Dir = t.TempDir()
		cmd.Env = cleanEnv(t.TempDir(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"FAKE_LAZY_LOG="+log, "FAKE_LAZY_STDOUT="+tc.stdout, "METRICS_PORT="+port, "REFRESH_SECONDS=0.2")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
		base := "http://127.0.0.1:" + port
		// A second run of lazy means the first one's answer is in (the
		// next is scheduled once it is).
		var code int
		var body string
		deadline := time.Now().Add(30 * time.Second)
		for {
			if len(readLazyCalls(t, log)) >= 2 {
				code, body = get(base + "/waiting")
				break
			}
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("lazy printing %q: no answer from the metrics server (last %d %q)\n%s", tc.stdout, code, body, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if code != tc.code || body != tc.body {
			t.Errorf("lazy printing %q: /waiting answered %d %q, want %d %q", tc.stdout, code, body, tc.code, tc.body)
		}
		if code, _ := get(base + "/other"); code != 404 {
			t.Errorf("/other answered %d, want 404", code)
		}
		stop()
		calls := readLazyCalls(t, log)
		if len(calls) == 0 || !slices.Equal(calls[0].Args, []string{"pool", "--count"}) {
			t.Errorf("the metrics server ran lazy %v, want lazy pool --count", calls)
		}
		if tc.code == 503 && !strings.Contains(stderr.String(), "lazy pool --count failed") {
			t.Errorf("lazy printing %q: the server does not log the failure: %q", tc.stdout, stderr.String())
		}
	}
}

// get returns the status and body of a GET of u (0 when it cannot connect).
func get(u string) (int, string) {
	resp, err := http.Get(u) //nolint:noctx // a test's own loopback server
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
