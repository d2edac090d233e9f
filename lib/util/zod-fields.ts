/**
 * @file zod fields that several config schemas share (the training config's parts, each beside its
 * code in lib/train/), so that each is written once.
 */
import { z } from 'zod';

/** A positive integer. */
export const positiveIntegerField = z.number().int().positive();
