/*
 * bench_json.c - JSON reading, jansson's json_loadb beside de_json_parse
 * (engine/base/jload.h), on the texts `serve` reads most (one core):
 *
 *   json-read  a pod as a watch event brings it once the claim controller
 *              has named its claim, an allocated claim as a write answer
 *              brings it (both without managedFields, as kc_loadb_lean
 *              reads them), and a ResourceSlice of 8 GPUs and 8 NICs from
 *              a list; each read --reps times (default 20,000) by each
 *              reader, and the trees compared once
 *
 * Prints per text the microseconds a read and MiB/s for each reader, and
 * the speed-up.
 */
#include "bench.h"
#include "../engine/base/jload.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char POD[] =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"m-01234\",\"namespace\":\"bench\","
    "\"uid\":\"6f1c2f5e-8a4b-4c1e-9d2a-3b7e5f0a9c11\",\"resourceVersion\":\"123456\","
    "\"creationTimestamp\":\"2026-12-05T01:00:00Z\"},\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-x7k2p\","
    "\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
    "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}},"
    "{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{\"apiVersion\":\"v1\","
    "\"fieldPath\":\"metadata.namespace\"}}]}}],\"defaultMode\":420}}],\"containers\":[{\"name\":\"pause\","
    "\"image\":\"registry.k8s.io/pause:3.10.1\",\"resources\":{\"claims\":[{\"name\":\"resource\"}]},"
    "\"volumeMounts\":[{\"name\":\"kube-api-access-x7k2p\",\"readOnly\":true,"
    "\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"terminationMessagePath\":"
    "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\"}],"
    "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":0,\"dnsPolicy\":\"ClusterFirst\","
    "\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\",\"securityContext\":{},"
    "\"schedulerName\":\"draengine\",\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","
    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
    "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true,\"preemptionPolicy\":"
    "\"PreemptLowerPriority\",\"resourceClaims\":[{\"name\":\"resource\",\"resourceClaimTemplateName\":"
    "\"test-claim-template\"}]},\"status\":{\"phase\":\"Pending\",\"qosClass\":\"BestEffort\","
    "\"resourceClaimStatuses\":[{\"name\":\"resource\",\"resourceClaimName\":\"m-01234-resource-abcde\"}]}}";

static const char CLAIM[] =
    "{\"kind\":\"ResourceClaim\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":{\"name\":"
    "\"m-01234-resource-abcde\",\"generateName\":\"m-01234-resource-\",\"namespace\":\"bench\",\"uid\":"
    "\"0b9d7c1e-2f4a-4d3b-8e6f-1a2b3c4d5e6f\",\"resourceVersion\":\"123460\",\"creationTimestamp\":"
    "\"2026-12-05T01:00:00Z\",\"annotations\":{\"resource.kubernetes.io/pod-claim-name\":\"resource\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"m-01234\",\"uid\":"
    "\"6f1c2f5e-8a4b-4c1e-9d2a-3b7e5f0a9c11\",\"controller\":true,\"blockOwnerDeletion\":true}],"
    "\"finalizers\":[\"resource.kubernetes.io/delete-protection\"]},\"spec\":{\"devices\":{\"requests\":"
    "[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu\",\"allocationMode\":\"ExactCount\",\"count\":1}},"
    "{\"name\":\"nic\",\"exactly\":{\"deviceClassName\":\"nic\",\"allocationMode\":\"ExactCount\",\"count\":1}}],"
    "\"constraints\":[{\"requests\":[\"gpu\",\"nic\"],\"matchAttribute\":"
    "\"resource.kubernetes.io/pcieRoot\"}]}},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"
    "\"gpu\",\"driver\":\"test-driver.cdi.k8s.io\",\"pool\":\"resourceslice-17\",\"device\":\"gpu-3\"},"
    "{\"request\":\"nic\",\"driver\":\"test-driver.cdi.k8s.io\",\"pool\":\"resourceslice-17\",\"device\":"
    "\"nic-3\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
    "\"operator\":\"In\",\"values\":[\"scheduler-perf-dra-17\"]}]}]},\"allocationTimestamp\":"
    "\"2026-12-05T01:00:01Z\"},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"m-01234\",\"uid\":"
    "\"6f1c2f5e-8a4b-4c1e-9d2a-3b7e5f0a9c11\"}]}}";

/* the slice is written out here: 16 devices of one shape */
static char *slice_text(void)
{
    size_t cap = 16384, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    n += (size_t)snprintf(s + n, cap - n,
                          "{\"kind\":\"ResourceSlice\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":{\"name\":"
                          "\"resourceslice-17\",\"uid\":\"5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9\","
                          "\"resourceVersion\":\"2001\",\"creationTimestamp\":\"2026-12-05T00:59:00Z\"},"
                          "\"spec\":{\"driver\":\"test-driver.cdi.k8s.io\",\"pool\":{\"name\":\"resourceslice-17\","
                          "\"generation\":1,\"resourceSliceCount\":1},\"nodeName\":\"scheduler-perf-dra-17\","
                          "\"devices\":[");
    for (int d = 0; d < 8; d++)
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"name\":\"gpu-%d\",\"attributes\":{\"type\":{\"string\":\"gpu\"},"
                              "\"resource.kubernetes.io/pcieRoot\":{\"string\":\"pci0000:%02x\"}},\"capacity\":"
                              "{\"memory\":{\"value\":\"80Gi\"}}},{\"name\":\"nic-%d\",\"attributes\":{\"type\":"
                              "{\"string\":\"nic\"},\"resource.kubernetes.io/pcieRoot\":{\"string\":\"pci0000:%02x\"}}}",
                              d ? "," : "", d, 0x10 * (d + 1), d, 0x10 * (d + 1));
    snprintf(s + n, cap - n, "]}}");
    return s;
}

/* thread CPU ns a read, over reps reads */
static double per_read(const char *s, size_t n, int reps, bool ours)
{
    uint64_t t0 = bench_cpu_ns();
    for (int i = 0; i < reps; i++) {
        json_t *j = ours ? de_json_parse(s, n, JSON_REJECT_DUPLICATES) : json_loadb(s, n, JSON_REJECT_DUPLICATES, NULL);
        json_decref(j);
    }
    return (double)(bench_cpu_ns() - t0) / reps;
}

int bench_json_read(FILE *out, int argc, char **argv)
{
    int reps = 20000;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
    if (reps < 1 || reps > 10000000) {
        fprintf(stderr, "bench json-read: --reps must be 1..10000000\n");
        return 2;
    }
    char *slice = slice_text();
    if (!slice)
        return 1;
    const struct { const char *name, *text; } texts[] = {{"pod", POD}, {"claim", CLAIM}, {"slice", slice}};
    int rc = 0;
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        size_t n = strlen(texts[t].text);
        json_t *a = de_json_parse(texts[t].text, n, JSON_REJECT_DUPLICATES);
        json_t *b = json_loadb(texts[t].text, n, JSON_REJECT_DUPLICATES, NULL);
        bool same = a && b && json_equal(a, b);
        json_decref(a);
        json_decref(b);
        if (!same) {
            fprintf(stderr, "bench json-read: the readers differ on the %s\n", texts[t].name);
            rc = 1;
            continue;
        }
        double theirs = per_read(texts[t].text, n, reps, false), ours = per_read(texts[t].text, n, reps, true);
        char fig[96];
        snprintf(fig, sizeof fig, "json-read-%s-bytes", texts[t].name);
        bench_print(out, fig, (double)n, "B");
        snprintf(fig, sizeof fig, "json-read-%s-jansson-us", texts[t].name);
        bench_print(out, fig, theirs / 1e3, "us");
        snprintf(fig, sizeof fig, "json-read-%s-draengine-us", texts[t].name);
        bench_print(out, fig, ours / 1e3, "us");
        snprintf(fig, sizeof fig, "json-read-%s-jansson-mib-per-s", texts[t].name);
        bench_print(out, fig, (double)n / theirs * 1e9 / 1048576.0, "MiB/s");
        snprintf(fig, sizeof fig, "json-read-%s-draengine-mib-per-s", texts[t].name);
        bench_print(out, fig, (double)n / ours * 1e9 / 1048576.0, "MiB/s");
        snprintf(fig, sizeof fig, "json-read-%s-speedup", texts[t].name);
        bench_print(out, fig, theirs / ours, "x");
    }
    free(slice);
    return rc;
}
