"""Plans exported to what runs them: a SkyPilot task (``skypilot.py``) and the configs of the RL/SFT frameworks
verl (``verl.py``), NeMo RL (``nemo_rl.py``) and TRL (``trl.py``), from one reader of a ``solve --json`` plan and its
instance (``plan_file.py``); ``writer.py`` names the files and renders them."""
