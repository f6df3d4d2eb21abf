/* SPDX-License-Identifier: MIT */
/*
 * The step model's inputs for a trace job (sim.h): its parallel layout and the shape of
 * its training step, from the trace's tp, pp, ep, cp and model columns. sched_comm.c
 * turns them and a placement into a step time (sim_acct.c calls it).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim.h"

/*
 * Peak dense FP16/BF16 throughput of one Ascend 910B, as reported (about 320 TFLOPS;
 * Huawei gives the 910 256 TFLOPS, Hot Chips 2019). Every server type is taken as a
 * 910B here: the step model compares placements, and compute is the same under all.
 */
#define SIM_NPU_PEAK_FLOPS 320e12

struct preset {
	const char *name;
	unsigned layers, hidden, seq_len;
	double params;		/* all of them, experts included */
	double expert_params;	/* in the experts of every MoE layer */
	unsigned experts, top_k; /* 0: dense */
};

static const struct preset presets[] = {
	/* 0: the default dense model, sized by sim_model_train() */
	{ "dense", 0, 0, 4096, 0, 0, 0, 0 },
	/*
	 * Llama 2 70B (Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat
	 * Models", arXiv:2307.09288, Table 1 and the model card): 80 layers, hidden 8192,
	 * 4,096-token context, 70e9 parameters.
	 */
	{ "llama70b", 80, 8192, 4096, 70e9, 0, 0, 0 },
	/*
	 * Mixtral 8x7B (Jiang et al., "Mixtral of Experts", arXiv:2401.04088, Table 1): 32
	 * layers, dim 4096, expert FFN hidden 14336, 8 experts, top 2; 46.7e9 parameters,
	 * 12.9e9 active per token. The experts hold 32 x 8 x 3 x 4096 x 14336 = 45.1e9 of
	 * them (SwiGLU: three matrices). Trained here on 4,096-token samples (an
	 * assumption: its context is 32k).
	 */
	{ "moe", 32, 4096, 4096, 46.7e9, 45.1e9, 8, 2 },
};

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

int sim_model_find(const char *name)
{
	for (size_t i = 1; i < NPRESETS; i++)
		if (strcmp(presets[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *sim_model_name(unsigned model)
{
	return model < NPRESETS ? presets[model].name : "?";
}

const char *sim_model_names(void)
{
	return "llama70b, moe";
}

int sim_model_layout(const struct sim_tjob *j, unsigned npus, const struct sim_options *o,
		     struct sched_parallel *ret)
{
	unsigned pp = j->pp ? j->pp : 1, cp = j->cp ? j->cp : 1, ep = j->ep ? j->ep : 1;
	unsigned tp = j->tp, rest;

	if (!npus || npus % (pp * cp * ep))
		return -EINVAL;
	rest = npus / (pp * cp * ep);
	if (!tp) {
		/* the largest group of at most --tp ranks that the rest divides into */
		for (tp = o->tp < rest ? o->tp : rest; tp > 1 && rest % tp; tp--)
			;
		if (!tp)
			tp = 1;
	}
	if (rest % tp)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->size[SCHED_DIM_TP] = tp;
	ret->size[SCHED_DIM_CP] = cp;
	ret->size[SCHED_DIM_PP] = pp;
	ret->size[SCHED_DIM_EP] = ep;
	ret->size[SCHED_DIM_DP] = npus / (tp * cp * pp);
	return 0;
}

void sim_model_train(const struct sim_tjob *j, const struct sched_parallel *par,
		     const struct sim_options *o, struct sched_train_model *ret)
{
	const struct preset *p = &presets[j->model < NPRESETS ? j->model : 0];
	unsigned npus = sched_parallel_npus(par);
	double active, tokens;

	memset(ret, 0, sizeof(*ret));
	ret->layers = p->layers;
	ret->hidden = p->hidden;
	ret->params = p->params;
	if (j->model == 0) {
		/*
		 * The default: a dense transformer of 1e9 parameters per NPU up to 70e9
		 * (bigger jobs train it with more data parallelism), 32 layers up to 16e9
		 * and 80 above (Llama 2's 7B and 70B depths), hidden from params ~ 12 x
		 * layers x hidden^2, rounded to 128.
		 */
		double params = 1e9 * (npus < 70 ? npus : 70);

		ret->params = params;
		ret->layers = params > 16e9 ? 80 : 32;
		ret->hidden = 128 * (unsigned)lround(sqrt(params / (12.0 * ret->layers)) / 128);
	}
	ret->seq_len = p->seq_len;
	ret->micro_batch = 1;
	/* four micro-batches per stage keeps 1F1B's bubble, (pp-1)/(m+pp-1), under 16% */
	ret->micro_batches = 4 * par->size[SCHED_DIM_PP];
	ret->expert_params = p->expert_params;
	ret->moe_layers = p->experts ? p->layers : 0;
	ret->top_k = p->top_k;
	ret->act_bytes = 2; /* bf16 */
	/* Megatron-LM all-reduces bf16 training's gradients in fp32
	 * (megatron/training/arguments.py: accumulate_allreduce_grads_in_fp32 unless
	 * --grad-reduce-in-bf16) */
	ret->grad_bytes = 4;
	/* an assumption: half of the DP all-reduce hides behind the backward pass
	 * (Megatron's --overlap-grad-reduce overlaps it bucket by bucket) */
	ret->dp_overlap = 0.5;
	/* compute: 6 FLOPs per active parameter and token (forward and backward) */
	active = ret->params - p->expert_params +
		 (p->experts ? p->expert_params * p->top_k / p->experts : 0);
	tokens = (double)ret->micro_batch * ret->micro_batches * ret->seq_len *
		 par->size[SCHED_DIM_DP];
	if (npus && o->mfu > 0)
		ret->compute_usec =
			6 * active * tokens / (npus * SIM_NPU_PEAK_FLOPS * o->mfu) * 1e6;
}
