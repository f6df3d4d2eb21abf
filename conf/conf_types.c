/* SPDX-License-Identifier: MIT */
/*
 * The Ascend server products as data (design.md §5). Adding a product is adding a row;
 * sched reads npu_count, hccs, hccs_group_size and legal_sizes_mask, never the name.
 */
#include <string.h>

#include "conf_internal.h"

#define SIZE_BIT(n) (UINT32_C(1) << (n))
/* Bits 1..n set: every count from 1 to n NPUs is legal on one server. */
#define SIZES_UP_TO(n) (((UINT32_C(1) << ((n) + 1)) - 1) & ~UINT32_C(1))

static const struct conf_server_type server_types[] = {
	{
		/* Two HCCS rings of 4 (0-3, 4-7): a partial server stays inside one ring. */
		.name = "atlas800",
		.product = "Atlas 800 (model 9000)",
		.chip = "910",
		.npu_count = 8,
		.hccs = CONF_HCCS_RING,
		.hccs_group_size = 4,
		.legal_sizes_mask = SIZE_BIT(1) | SIZE_BIT(2) | SIZE_BIT(4) | SIZE_BIT(8),
		.rank_table_version = "1.0",
	},
	{
		/* 8 NPUs in one HCCS full mesh: any count fits. */
		.name = "atlas800t-a2",
		.product = "Atlas 800T A2",
		.chip = "910B",
		.npu_count = 8,
		.hccs = CONF_HCCS_MESH,
		.hccs_group_size = 8,
		.legal_sizes_mask = SIZES_UP_TO(8),
		.rank_table_version = "1.0",
	},
	{
		/*
		 * The inference server of the 910B generation: 8 NPUs in one HCCS full mesh,
		 * as the 800T A2, so the same placement rules. MindIE Server runs
		 * multi-node inference on it, up to 4 servers and 32 NPUs an instance
		 * (MindIE installation guide, multi-node inference constraints).
		 */
		.name = "atlas800i-a2",
		.product = "Atlas 800I A2",
		.chip = "910B",
		.npu_count = 8,
		.hccs = CONF_HCCS_MESH,
		.hccs_group_size = 8,
		.legal_sizes_mask = SIZES_UP_TO(8),
		.rank_table_version = "1.0",
	},
	{
		/* 16 dies in pairs; super pods need rank table 1.2. */
		.name = "atlas900-a3",
		.product = "Atlas 900 A3 SuperPoD",
		.chip = "910C",
		.npu_count = 16,
		.hccs = CONF_HCCS_PAIR,
		.hccs_group_size = 2,
		.legal_sizes_mask = SIZES_UP_TO(16),
		.rank_table_version = "1.2",
	},
};

_Static_assert(SIZES_UP_TO(16) <= UINT32_MAX, "legal_sizes_mask holds up to 31 NPUs");

const struct conf_server_type *conf_server_type_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(server_types) / sizeof(server_types[0]); i++)
		if (strcmp(server_types[i].name, name) == 0)
			return &server_types[i];
	return NULL;
}

const struct conf_server_type *conf_server_type_list(size_t *ret_count)
{
	if (ret_count)
		*ret_count = sizeof(server_types) / sizeof(server_types[0]);
	return server_types;
}
