"""Sourced prices and sizes for environment pools (issue 27, lever 1): what the shipped example
``instances/qwen3-32b-agentic-rl-environments.json`` and the README's "Environments" section quote.

None of these is a default of the cost model: an instance's pool gives its own provider's price
(``schema/environments.py``), since sandboxes differ by provider, size and region, and a pool on the GPU
hosts' CPUs can spare what the trainer and the rollout engine leave free. The reference note is
``reference/environments.md`` (what each source says, and what no source gives).
"""

from __future__ import annotations

# AWS Fargate, Linux/x86, us-east-1, on demand, billed per second while a task runs (one-minute minimum): USD per
# vCPU-hour and per GB-hour (Vantage, "AWS Fargate Pricing Explained", quoting the Fargate pricing page; the same
# rates in Wring, "AWS Fargate Pricing: Serverless Container Costs", 2026-03-10).
FARGATE_USD_PER_VCPU_HOUR = 0.04048
FARGATE_USD_PER_GB_HOUR = 0.004445

# E2B sandboxes, billed per second while running, on the vCPU and RAM allocated ("regardless of how much your
# code actually uses"): USD per vCPU-hour and per GiB-hour (e2b.dev/docs/faq/calculate-sandbox-price, "Current
# rates"; its worked example: 2 vCPU + 0.5 GiB = $0.109 per hour).
E2B_USD_PER_VCPU_HOUR = 0.0504
E2B_USD_PER_GIB_HOUR = 0.0162

# AWS Application Load Balancer: USD per ALB-hour and per LCU-hour, one LCU covering 1 GB per hour of traffic
# processed for EC2 or IP targets (cloud-horizons.com, "ALB: the line item nobody watches", 2026-05-08: "$0.0225
# per ALB per hour", "The LCU-hour bills $0.008 each", "1 GB per hour equals one LCU"). Traffic that dominates the
# LCU is so priced at $0.008 per GB processed (INFERRED: one LCU-hour per GB).
ALB_USD_PER_HOUR = 0.0225
ALB_USD_PER_GB_PROCESSED = 0.008

# AWS data transfer between availability zones of one region: USD per GB in each direction (finopsforge.com,
# "Reduce AWS data transfer costs": "Between AZs in same region | $0.01/GB each way"; the same in Last Week in
# AWS, "AWS cross-AZ data transfer costs more than AWS says", 2019, measured on a bill). A sample's traffic that
# crosses zones both ways pays it twice.
AWS_CROSS_AZ_USD_PER_GB_EACH_WAY = 0.01

# The CPUs of an 8 × B200 node: AWS p6-b200.48xlarge, 192 vCPUs and 2,048 GiB (Red Hat OpenShift Service on AWS,
# the compute types it supports: openshift/openshift-docs, modules/rosa-sdpolicy-am-aws-compute-types.adoc, commit
# 125467a, "p6-b200.48xlarge (192 vCPU, 2,048 GiB)"). How many of them environments may use beside the trainer's
# data loaders and the rollout engine is the job's own figure (no source gives it): the shipped example spares a
# third, 64 per node.
P6_B200_48XLARGE_VCPUS = 192


def sandbox_usd_per_hour(vcpus: float, memory_gb: float, provider: str = "aws-fargate") -> float:
    """What one sandbox of ``vcpus`` vCPUs and ``memory_gb`` GB (GiB for E2B) costs per hour it runs."""
    if provider == "aws-fargate":
        return vcpus * FARGATE_USD_PER_VCPU_HOUR + memory_gb * FARGATE_USD_PER_GB_HOUR
    if provider == "e2b":
        return vcpus * E2B_USD_PER_VCPU_HOUR + memory_gb * E2B_USD_PER_GIB_HOUR
    raise ValueError(f"provider: expected 'aws-fargate' or 'e2b', got {provider!r}")


def traffic_usd_per_gb_behind_an_alb_across_zones() -> float:
    """A GB between the trainer and sandboxes behind a load balancer in other zones: the ALB's processing and the
    cross-zone transfer both ways."""
    return ALB_USD_PER_GB_PROCESSED + 2 * AWS_CROSS_AZ_USD_PER_GB_EACH_WAY
