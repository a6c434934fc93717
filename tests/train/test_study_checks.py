"""rljax.train.study_checks: the NFT ≡ GRPO identity holds batch by batch."""

from rljax.train import study_checks


def test_nft_identity_batch_by_batch():
    """NFT·(1 − r_q) = Dr.GRPO; NFT·sqrt((1 − r_q)/r_q) = GRPO (ddof=0); ddof=1: ·sqrt((G−1)/G)."""
    out = study_checks.nft_identity(num_groups=6, group=8, seed=3)
    assert out["dr_grpo_max_rel_diff"] < 1e-5
    assert out["grpo_ddof0_max_rel_diff"] < 1e-5
    assert out["grpo_ddof1_max_rel_diff"] < 1e-5
    # without the per-prompt weight the two directions differ when prompts' accuracies differ
    assert out["unweighted_vs_grpo_cosine"] < 0.999
