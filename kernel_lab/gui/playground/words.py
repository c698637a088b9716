"""The Playground window's words: how a method is named, what its step and its size
count, which controls it uses (the others are greyed out)."""

from __future__ import annotations

METHOD_TEXT = {"krr": "exact KRR", "ckrr": "exact CKRR", "nystrom": "Nyström ridge",
               "rff": "random-feature ridge", "dsg": "doubly stochastic gradients",
               "gfc": "greedy feature construction"}
#: What one step of a stepped method adds (the step plot's x axis).
STEP_WORD = {"dsg": "iteration", "gfc": "features"}
#: The parameters each method uses (the window greys out the others).
USES = {"krr": {"kernel", "sigma", "lam"}, "ckrr": {"kernel", "sigma", "lam"},
        "nystrom": {"kernel", "sigma", "lam", "s", "sampler", "leverage"},
        "rff": {"kernel", "sigma", "lam", "D", "orthogonal"},
        "dsg": {"kernel", "sigma", "nu", "steps"}, "gfc": {"steps"}}
#: What a method's size counts ("features" unless said).
SIZE_WORD = {"nystrom": "landmarks"}
#: The error the small plots show, by task (the read-out's words, spelled out).
ERROR_LABEL = {"regression": "MSE", "classification": "misclassified"}
