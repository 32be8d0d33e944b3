/**
 * Running an offline plan (`meta partitions move|delete`) with the admin vocabulary: print the
 * plan, then a dry run unless --execute; with --execute, ask on a terminal (unless --yes, never
 * without a terminal: @inquirer/confirm never returns at stdin EOF) and apply it under the data
 * directory lock.
 */
import {applyPartitionPlan, type PartitionPlan} from '../../broker/index.js'
import {planSummary, renderPartitionPlan} from './operations.js'

export interface OfflineResult extends PartitionPlan {
  executed: boolean
}

export async function runOfflinePlan(
  plan: PartitionPlan,
  options: {execute: boolean; yes: boolean; json: boolean; command: string; question: string},
): Promise<OfflineResult> {
  const say = (text: string) => {
    if (!options.json) process.stderr.write(text)
  }
  if (!options.json) process.stdout.write(renderPartitionPlan(plan))
  if (!options.execute || plan.steps.length === 0) {
    say(planSummary(plan, false))
    return {...plan, executed: false}
  }
  // Loaded only here: the prompt library is large and only a person at a terminal needs it.
  const {confirmOnTty, declined} = await import('./confirm.js')
  if (!(await confirmOnTty(options.question, {yes: options.yes}))) throw declined(options.command)
  await applyPartitionPlan(plan, options.command)
  say(planSummary(plan, true))
  return {...plan, executed: true}
}
