// Command tern-kube-apiserver runs a real Kubernetes API server (k8s.io/kubernetes,
// in-process) backed by an embedded etcd, for Tern's integration tests.
//
// It generates its own PKI in the data dir (CA, serving certificate for
// 127.0.0.1/localhost, service-account signing key, admin token), writes an admin
// kubeconfig, prints exactly one line "ready https://127.0.0.1:PORT" on stdout once
// /readyz answers 200, and shuts down cleanly on SIGTERM/SIGINT. It asks the kernel
// for SIGTERM when its parent dies (PR_SET_PDEATHSIG), so a killed test process does
// not leak it.
//
// Everything else (klog, etcd logs, errors) goes to stderr.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"golang.org/x/sys/unix"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

func main() {
	os.Exit(run())
}

func run() int {
	// Die with the parent. Read the parent pid first so that a parent that died
	// before prctl took effect is noticed too.
	ppid := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: prctl(PR_SET_PDEATHSIG): %v\n", err)
		return 1
	}
	if os.Getppid() != ppid {
		fmt.Fprintln(os.Stderr, "tern-kube-apiserver: parent exited during start-up")
		return 1
	}

	fs := flag.NewFlagSet("tern-kube-apiserver", flag.ContinueOnError)
	port := fs.Int("port", 0, "secure port of the API server on 127.0.0.1 (required)")
	dataDir := fs.String("data-dir", "", "directory for etcd data, certificates and keys; reused on restart (required)")
	kubeconfig := fs.String("kubeconfig", "", "where to write the admin kubeconfig (default: <data-dir>/admin.kubeconfig)")
	verbosity := fs.Int("v", 0, "kube-apiserver log verbosity (klog -v)")
	etcdLogLevel := fs.String("etcd-log-level", "error", "embedded etcd log level (debug, info, warn, error)")
	readyTimeout := fs.Duration("ready-timeout", 60*time.Second, "give up if /readyz is not OK within this time")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tern-kube-apiserver -port N -data-dir DIR [-kubeconfig FILE] [-- extra kube-apiserver flags]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *port <= 0 || *port > 65535 || *dataDir == "" {
		fs.Usage()
		return 2
	}
	extraArgs := fs.Args()

	// Installs the SIGTERM/SIGINT handler (k8s SetupSignalContext): from here on a
	// signal cancels ctx instead of killing the process, so etcd is always closed.
	cmd := app.NewAPIServerCommand()
	ctx := cmd.Context()

	abs, err := filepath.Abs(*dataDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: data dir: %v\n", err)
		return 1
	}
	*dataDir = abs
	if *kubeconfig == "" {
		*kubeconfig = filepath.Join(*dataDir, "admin.kubeconfig")
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: data dir: %v\n", err)
		return 1
	}

	p, err := ensurePKI(filepath.Join(*dataDir, "pki"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: pki: %v\n", err)
		return 1
	}

	// Fail early, with a recognisable message, if the API server port is taken.
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))); err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: port %d is not available: %v\n", *port, err)
		return 3
	} else {
		_ = l.Close()
	}

	etcd, etcdURL, err := startEtcd(ctx, filepath.Join(*dataDir, "etcd"), *etcdLogLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: etcd: %v\n", err)
		return 1
	}
	defer func() {
		etcd.Close()
		fmt.Fprintln(os.Stderr, "tern-kube-apiserver: etcd stopped")
	}()

	serverURL := fmt.Sprintf("https://127.0.0.1:%d", *port)
	if err := writeKubeconfig(*kubeconfig, serverURL, p); err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: kubeconfig: %v\n", err)
		return 1
	}

	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(*port),
		"--cert-dir=" + filepath.Join(*dataDir, "pki", "generated"),
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCert,
		"--token-auth-file=" + p.tokenFile,
		"--authorization-mode=Node,RBAC",
		"--etcd-servers=" + etcdURL,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + p.saPublic,
		"--service-account-signing-key-file=" + p.saPrivate,
		"--api-audiences=" + serviceAccountIssuer,
		"--service-cluster-ip-range=10.96.0.0/16",
		// No kubelets, no controller-manager: nothing should reconcile the
		// "kubernetes" Service endpoints.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=" + strconv.Itoa(*verbosity),
	}
	args = append(args, extraArgs...)
	cmd.SetArgs(args)
	cmd.SetOut(os.Stderr)
	cmd.SetErr(os.Stderr)

	if ctx.Err() != nil {
		return 0
	}

	go func() {
		if err := waitReady(ctx, serverURL, p, *readyTimeout); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "tern-kube-apiserver: %v\n", err)
				// Fatal: tear the whole process down (etcd is closed by the kernel).
				os.Exit(4)
			}
			return
		}
		fmt.Fprintf(os.Stdout, "ready %s\n", serverURL)
	}()

	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "tern-kube-apiserver: kube-apiserver: %v\n", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "tern-kube-apiserver: kube-apiserver stopped")
	return 0
}

// startEtcd starts a single-member etcd on free loopback ports. The ports are
// remembered in the data dir and reused on restart when still free.
func startEtcd(ctx context.Context, dir, logLevel string) (*embed.Etcd, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	portsFile := dir + ".ports"
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		client, peer, err := etcdPorts(portsFile, attempt > 0)
		if err != nil {
			return nil, "", err
		}
		cfg := embed.NewConfig()
		cfg.Name = "tern"
		cfg.Dir = dir
		cfg.UnsafeNoFsync = true // test data: speed over durability across power loss
		cfg.LogLevel = logLevel
		cfg.LogOutputs = []string{"stderr"}
		cfg.EnableGRPCGateway = false
		clientURL := mustURL(fmt.Sprintf("http://127.0.0.1:%d", client))
		peerURL := mustURL(fmt.Sprintf("http://127.0.0.1:%d", peer))
		cfg.ListenClientUrls = []urlT{clientURL}
		cfg.AdvertiseClientUrls = []urlT{clientURL}
		cfg.ListenPeerUrls = []urlT{peerURL}
		cfg.AdvertisePeerUrls = []urlT{peerURL}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err
			if isAddrInUse(err) {
				continue
			}
			return nil, "", err
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			e.Close()
			return nil, "", errors.New("not ready within 30s")
		case <-ctx.Done():
			e.Close()
			return nil, "", ctx.Err()
		}
		_ = os.WriteFile(portsFile, []byte(fmt.Sprintf("%d %d\n", client, peer)), 0o600)
		return e, clientURL.String(), nil
	}
	return nil, "", fmt.Errorf("no free ports after 5 attempts: %w", lastErr)
}

func etcdPorts(portsFile string, fresh bool) (int, int, error) {
	if !fresh {
		if b, err := os.ReadFile(portsFile); err == nil {
			f := strings.Fields(string(b))
			if len(f) == 2 {
				c, err1 := strconv.Atoi(f[0])
				p, err2 := strconv.Atoi(f[1])
				if err1 == nil && err2 == nil {
					return c, p, nil
				}
			}
		}
	}
	c, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	p, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	return c, p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// waitReady polls /readyz as the admin user until it answers 200.
func waitReady(ctx context.Context, serverURL string, p *pki, timeout time.Duration) error {
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.caCert)
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	deadline := time.Now().Add(timeout)
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, serverURL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not OK within %s (last: %s)", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
