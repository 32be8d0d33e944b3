import {ClientCommand} from '../../cli/client-command.js'
import {usageErrors} from '../../cli/usage.js'
import {MetaError} from '../../protocol/errors.js'
import {checkTarget, settingsOf, topicChangeArgs, topicChangeFlags, type TopicAnswer} from '../../cli/admin/topic-admin.js'

export default class TopicAlter extends ClientCommand<typeof TopicAlter> {
  static override summary = "Change a topic's partition count (it only grows) or its [topic=…] settings on a running broker."

  static override description = `Works on any topic the broker has (a section in server.ini, created online, or data). The change goes into the broker's topic overlay (<dataPath>/__meta_state/topic-overlay.json), which is kept across restarts and stays on top of server.ini: at a reload a key set online wins over the same key in the file. Each --set key=value is any key of a [topic=…] section, checked as server.ini checks it. --partitions only grows the topic (to shrink one: close, drain and delete partitions, see meta partitions); new partitions are served at once and groups rebalance.

In a cluster give --zk with --broker-id: a topic is changed on one broker.`

  static override examples = [
    {description: 'Grow to eight partitions', command: '<%= config.bin %> <%= command.id %> orders --partitions 8'},
    {description: 'Stop accepting puts', command: '<%= config.bin %> <%= command.id %> orders --set acceptPublish=false'},
  ]

  static override enableJsonFlag = true

  static override args = topicChangeArgs

  static override flags = topicChangeFlags

  async run(): Promise<TopicAnswer[] | undefined> {
    const topic = this.requiredArgOrFlag('topic')
    const settings = usageErrors(() => {
      checkTarget(topic, this.flags)
      const given = settingsOf(this.flags)
      if (Object.keys(given).length === 0)
        throw MetaError.invalidArgument(`nothing to change for topic "${topic}": expected --partitions N or at least one --set key=value`)
      return given
    })
    const {changeTopic} = await import('../../cli/admin/topic-admin.js')
    return changeTopic({context: this.adminContext(), brokerId: this.flags['broker-id'], json: this.jsonEnabled()}, 'alter', topic, settings)
  }
}
