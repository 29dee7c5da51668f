"""A SkyPilot task (``sky launch task.yaml``) for each stage: the resources the plan decides, the run command left
to the user.

Keys (SkyPilot's task YAML, docs/source/reference/yaml-spec.rst of skypilot-org/skypilot): ``num_nodes``,
``resources.accelerators`` as ``{NAME: count per node}``, ``resources.use_spot``, ``resources.cloud``,
``resources.region``, ``run``. Accelerator names are SkyPilot's (``sky show-gpus``; docs/source/compute/gpus.rst
and the catalogs of skypilot-org/skypilot-catalog, e.g. catalogs/v7/lambda/vms.csv names the H100 SXM5 ``H100``).
"""

from __future__ import annotations

from planopt.export.common import Rendered, environment_note, node_notes, refuse

NAME = "skypilot"

# planopt GPU name (models/catalog/gpus.json) -> SkyPilot accelerator name (`sky show-gpus -a`; AWS p5 and Lambda
# gpu_8x_h100_sxm5 are "H100", p4de "A100-80GB", p4d "A100", p5en "H200", GCP a4 "B200")
ACCELERATORS = {
    "A100-40GB": "A100", "A100-80GB": "A100-80GB", "H100-SXM": "H100", "H100-PCIe": "H100", "H200": "H200",
    "B200": "B200", "GB200": "GB200", "L40S": "L40S", "L4": "L4", "MI300X": "MI300X", "MI325X": "MI325X",
}
# planopt provider (models/catalog/prices.json) -> SkyPilot cloud (`sky check`); the others have no SkyPilot cloud
CLOUDS = {"aws": "aws", "aws-capacity-blocks": "aws", "gcp": "gcp", "lambda": "lambda", "runpod": "runpod",
          "nebius": "nebius", "vast": "vast"}
# Regions of prices.json that name no real region of their cloud (a price that holds everywhere): left out
PLACEHOLDER_REGIONS = ("global", "us")
RUN_PLACEHOLDER = "# planopt leaves the run command to you: start the training (verl, NeMo RL or TRL) here"


def render(job, stage) -> Rendered:
    """The SkyPilot task of one stage."""
    if stage.gpu not in ACCELERATORS:
        refuse(NAME, f"stage {stage.number}: no SkyPilot accelerator name for {stage.gpu} (TPU slices are named by "
                     "slice, not by a count per node); known: " + ", ".join(ACCELERATORS))
    resources = {"accelerators": {ACCELERATORS[stage.gpu]: stage.gpus_on_each_node}, "use_spot": stage.tier == "spot"}
    notes = node_notes(stage)
    if stage.gpu == "H100-PCIe":
        notes.append(f"stage {stage.number}: SkyPilot names PCIe and SXM H100s alike ('H100'); pick a PCIe instance type "
                     "if it matters")
    if stage.provider is not None:
        cloud = CLOUDS.get(stage.provider)
        if cloud is None:
            notes.append(f"stage {stage.number}: provider {stage.provider} has no SkyPilot cloud; cloud and region are "
                         "left for SkyPilot to choose")
        else:
            resources["cloud"] = cloud
            if stage.region not in PLACEHOLDER_REGIONS:
                resources["region"] = stage.region
            if stage.provider == "aws-capacity-blocks":
                notes.append(f"stage {stage.number}: an AWS capacity block is bought ahead; launch into it by its "
                             "reservation (resources.reservations is not set here)")
    else:
        notes.append(f"stage {stage.number}: the plan names no provider offer; cloud and region are left for SkyPilot")
    if stage.rollout is not None:
        notes.append(f"stage {stage.number}: the {stage.rollout['gpu_count']} separate {stage.rollout['gpu']} rollout GPUs "
                     "need a second task or a job group; this task holds the training GPUs only")
    if stage.environments is not None:
        notes.append(environment_note(stage, NAME))
    content = {"name": f"planopt-stage{stage.number}-{stage.method}", "num_nodes": stage.num_nodes,
               "resources": resources, "run": RUN_PLACEHOLDER}
    header = ["spot: launch it as a managed job (`sky jobs launch task.yaml`), which recovers from preemptions"] \
        if stage.tier == "spot" else []
    return Rendered(content, notes, header)
