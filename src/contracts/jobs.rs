//! The verification queue: requests become jobs stored in `verification_jobs` and are compiled in the background,
//! at most [`RUNNING`] at once and [`QUEUED`] waiting (a request beyond that is refused), each under a time limit
//! (the compiler is killed past it). A job stopped by a shutdown stays `Queued` or `Running` in the store and is
//! re-queued at the next start; jobs that no longer fit the queue then are marked failed.

use super::creation::{CreationInput, CreationTraces};
use super::verifier::{self, Compilers, Deployed, Request};
use crate::node::Node;
use crate::store::records::VerifiedSource;
use crate::store::records::{JobState, VerificationJob};
use crate::store::tables::{Code, Contracts, VerificationJobs, VerifiedSources};
use crate::store::{keys::SerialKey, Durability, Store, StoreResult};
use alloy::primitives::{Address, B256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// Why a newly matched source does not replace the stored one of the same code, if it does not: a full match is
/// final, and a partial one gives way to a full match only (otherwise anyone could swap a verified contract's
/// comments, names and parameter names for misleading ones, as the metadata hash alone tells them apart).
fn kept_instead(stored: Option<&VerifiedSource>, new: &VerifiedSource) -> Option<&'static str> {
    match stored {
        Some(stored) if stored.code_hash == new.code_hash && stored.full_match => Some(ALREADY_VERIFIED),
        Some(stored) if stored.code_hash == new.code_hash && !new.full_match => Some(ALREADY_PARTIAL),
        _ => None,
    }
}

/// The refusal of a source for a contract verified with a full match.
pub const ALREADY_VERIFIED: &str = "Already verified";
/// The refusal of a partial match for a contract verified with a partial match.
const ALREADY_PARTIAL: &str =
    "Already verified with a partial match: only a full match (the same metadata hash) replaces it";

/// Jobs compiled at once.
pub const RUNNING: usize = 2;
/// Jobs waiting at most.
pub const QUEUED: usize = 16;
/// Jobs waiting or running for one contract at most, so that requests for one contract cannot fill the queue.
pub const PER_CONTRACT: usize = 2;
/// How long a job waits for the node's trace of a creation inside a transaction (for its init code).
const TRACE_TIMEOUT: Duration = Duration::from_secs(10);
/// The reason of a job for an address without indexed code.
const NO_CODE: &str = "the address has no indexed contract code";
/// The reason of a job for a contract created inside a transaction the node gave no trace of.
const NO_TRACE: &str = "the node gave no trace of the transaction that created this contract (its creation input, \
                        with the constructor arguments, is only there); try again when the node answers";

/// Why a request was not queued.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The queue is full.
    #[error("the verification queue is full ({QUEUED} jobs waiting); try again later")]
    Full,
    /// The contract has [`PER_CONTRACT`] jobs waiting or running already.
    #[error("this contract has {PER_CONTRACT} verifications waiting already; try again when they have finished")]
    ContractBusy,
    /// The job could not be stored.
    #[error("store error: {0}")]
    Store(String),
}

/// What tells two requests apart: the same fingerprint for one contract is the same job.
fn fingerprint(compiler_version: &str, contract_name: &str, input: &str) -> B256 {
    let mut hasher = alloy::primitives::Keccak256::new();
    for part in [compiler_version, contract_name, input] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize()
}

/// A finished job, announced to WebSocket subscribers.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The contract.
    pub address: Address,
    /// `None`: verified; else the reason it was not.
    pub failure: Option<String>,
}

/// The queue: submit jobs, read their state, hear their outcomes.
#[derive(Debug)]
pub struct Verifications {
    store: Arc<Store>,
    /// Traces creations inside transactions, for their init code (in the places the API's traces share).
    traces: CreationTraces,
    compilers: Compilers,
    limit: Duration,
    next_id: AtomicU64,
    sender: mpsc::Sender<u64>,
    receiver: Mutex<Option<mpsc::Receiver<u64>>>,
    outcomes: broadcast::Sender<Outcome>,
    /// Held while a job's source is compared with the stored one and saved, so two jobs for one address cannot
    /// both pass the comparison.
    saving: Mutex<()>,
    /// The jobs waiting or running, by contract: id and fingerprint.
    waiting: Mutex<HashMap<Address, Vec<(u64, B256)>>>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl Verifications {
    /// A queue over `store` compiling with `compilers`, `limit` per job, asking `node` for the init code of contracts
    /// created inside transactions; pending jobs of an earlier run are queued again (or failed when more than the
    /// queue holds).
    pub fn new(store: Arc<Store>, node: Node, compilers: Compilers, limit: Duration) -> StoreResult<Arc<Self>> {
        let (sender, receiver) = mpsc::channel(QUEUED);
        let mut last = 0;
        let mut pending = Vec::new();
        for row in store.reader().rows::<VerificationJobs>() {
            let (SerialKey(id), job) = row?;
            last = id;
            if matches!(job.state, JobState::Queued | JobState::Running) {
                pending.push((id, job));
            }
        }
        let queue = Arc::new(Verifications {
            store,
            traces: CreationTraces::new(node),
            compilers,
            limit,
            next_id: AtomicU64::new(last + 1),
            sender,
            receiver: Mutex::new(Some(receiver)),
            outcomes: broadcast::channel(64).0,
            saving: Mutex::new(()),
            waiting: Mutex::new(HashMap::new()),
        });
        for (id, job) in pending {
            let print = fingerprint(&job.compiler_version, &job.contract_name, &job.input);
            queue.waiting_jobs().entry(job.address).or_default().push((id, print));
            if queue.sender.try_send(id).is_err() {
                queue.finish(
                    id,
                    job,
                    JobState::Failed("the queue was full when it was restored after a restart".into()),
                )?;
            }
        }
        Ok(queue)
    }

    /// The compilers in use.
    pub fn compilers(&self) -> &Compilers {
        &self.compilers
    }

    /// Subscribes to job outcomes.
    pub fn subscribe(&self) -> broadcast::Receiver<Outcome> {
        self.outcomes.subscribe()
    }

    fn waiting_jobs(&self) -> std::sync::MutexGuard<'_, HashMap<Address, Vec<(u64, B256)>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `request` for `address`; returns the job id. The same request for the same contract while its job is
    /// waiting or running is that job (its id again); a contract has at most [`PER_CONTRACT`] jobs at once.
    pub fn submit(&self, address: Address, request: &Request) -> Result<u64, SubmitError> {
        let input = request.input.to_string();
        let print = fingerprint(&request.compiler_version, &request.contract_name, &input);
        let mut waiting = self.waiting_jobs();
        let jobs = waiting.get(&address).map(Vec::as_slice).unwrap_or_default();
        if let Some((id, _)) = jobs.iter().find(|(_, p)| *p == print) {
            return Ok(*id);
        }
        if jobs.len() >= PER_CONTRACT {
            return Err(SubmitError::ContractBusy);
        }
        let permit = self.sender.try_reserve().map_err(|_| SubmitError::Full)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let job = VerificationJob {
            address,
            compiler_version: request.compiler_version.clone(),
            contract_name: request.contract_name.clone(),
            input,
            state: JobState::Queued,
            created_ms: now_ms(),
        };
        self.put(id, &job).map_err(|e| SubmitError::Store(e.to_string()))?;
        // Only a queued job has an entry: a refused request leaves none behind.
        waiting.entry(address).or_default().push((id, print));
        permit.send(id);
        Ok(id)
    }

    /// The job with `id`, if any.
    pub fn job(&self, id: u64) -> StoreResult<Option<VerificationJob>> {
        self.store.reader().get::<VerificationJobs>(&SerialKey(id))
    }

    fn put(&self, id: u64, job: &VerificationJob) -> StoreResult<()> {
        let mut batch = self.store.batch();
        batch.put::<VerificationJobs>(&SerialKey(id), job)?;
        self.store.write(batch, Durability::Sync)
    }

    /// Records how job `id` ended; its input (up to the request bound, 10 MiB) is not kept past that.
    fn finish(&self, id: u64, mut job: VerificationJob, state: JobState) -> StoreResult<()> {
        let failure = match &state {
            JobState::Failed(reason) => Some(reason.clone()),
            _ => None,
        };
        job.state = state;
        job.input = String::new();
        self.put(id, &job)?;
        let mut waiting = self.waiting_jobs();
        if let Some(jobs) = waiting.get_mut(&job.address) {
            jobs.retain(|(waiting_id, _)| *waiting_id != id);
            if jobs.is_empty() {
                waiting.remove(&job.address);
            }
        }
        drop(waiting);
        let _ = self.outcomes.send(Outcome { address: job.address, failure });
        Ok(())
    }

    /// The chain's code for `address` as the index has it, with its creation input (from the node's trace for a
    /// contract created inside a transaction); why it cannot be compared when the index has no code for it, or
    /// the node gives no trace within [`TRACE_TIMEOUT`] (a match of the runtime code alone would be stored as
    /// final, without the constructor arguments).
    /// The node traces for creation inputs, shared with the API.
    pub fn traces(&self) -> &CreationTraces {
        &self.traces
    }

    async fn deployed(&self, address: Address) -> StoreResult<Result<Deployed, String>> {
        let (runtime, creation) = {
            let reader = self.store.reader();
            let code = match reader.get::<Contracts>(&address)? {
                Some(row) => reader.get::<Code>(&row.code_hash)?.map(|code| (code, row.creation_tx)),
                None => None,
            };
            let Some((runtime, tx)) = code else { return Ok(Err(NO_CODE.into())) };
            (runtime, CreationInput::of(&reader, tx, address)?)
        };
        let inside = matches!(creation, CreationInput::Traced(_));
        let creation_input = self.traces.inputs(vec![(address, creation)], TRACE_TIMEOUT).await.pop().flatten();
        if inside && creation_input.is_none() {
            return Ok(Err(NO_TRACE.into()));
        }
        Ok(Ok(Deployed { runtime, creation_input }))
    }

    async fn run_job(&self, id: u64) -> StoreResult<()> {
        let Some(mut job) = self.job(id)? else { return Ok(()) };
        job.state = JobState::Running;
        self.put(id, &job)?;
        let outcome = match (self.deployed(job.address).await?, serde_json::from_str(&job.input)) {
            (Err(reason), _) => Err(reason),
            (_, Err(e)) => Err(format!("invalid standard JSON input: {e}")),
            (Ok(deployed), Ok(input)) => {
                let request = Request {
                    compiler_version: job.compiler_version.clone(),
                    contract_name: job.contract_name.clone(),
                    input,
                };
                verifier::verify(&self.compilers, &request, &deployed, self.limit).await.map_err(|e| e.to_string())
            }
        };
        let saved = match outcome {
            Ok(source) => {
                let _saving = self.saving.lock().unwrap_or_else(|p| p.into_inner());
                let stored = self.store.reader().get::<VerifiedSources>(&job.address)?;
                match kept_instead(stored.as_ref(), &source) {
                    Some(reason) => Err(reason.to_owned()),
                    None => verifier::save(&self.store, job.address, &source).map(Ok)?,
                }
            }
            Err(reason) => Err(reason),
        };
        match saved {
            Ok(()) => self.finish(id, job, JobState::Verified),
            Err(reason) => self.finish(id, job, JobState::Failed(reason)),
        }
    }

    /// Runs the queue until `cancel` (jobs cut short stay pending in the store for the next start).
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let Some(mut receiver) = self.receiver.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        let slots = Arc::new(Semaphore::new(RUNNING));
        let tracker = tokio_util::task::TaskTracker::new();
        loop {
            let permit = tokio::select! {
                _ = cancel.cancelled() => break,
                permit = slots.clone().acquire_owned() => permit,
            };
            let Ok(permit) = permit else { break };
            let id = tokio::select! {
                _ = cancel.cancelled() => break,
                id = receiver.recv() => match id { Some(id) => id, None => break },
            };
            let (queue, cancel) = (self.clone(), cancel.clone());
            tracker.spawn(async move {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    result = queue.run_job(id) => if let Err(e) = result {
                        tracing::warn!(job = id, error = %e, "verification job could not be recorded");
                    },
                }
                drop(permit);
            });
        }
        tracker.close();
        tracker.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;
    use serde_json::json;

    /// A node nothing listens for (these jobs have no contract code, so none is asked).
    fn no_node() -> Node {
        Node::new("http://127.0.0.1:9", None, Duration::from_secs(1)).unwrap()
    }

    fn request() -> Request {
        Request {
            compiler_version: "0.8.37".into(),
            contract_name: "C".into(),
            input: json!({"sources": {"c.sol": {"content": ""}}}),
        }
    }

    #[tokio::test]
    async fn the_queue_is_bounded_and_pending_jobs_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &StoreOptions::default()).unwrap());
        let queue = Verifications::new(store.clone(), no_node(), Compilers::default(), Duration::from_secs(1)).unwrap();
        let contract = |i: usize| Address::with_last_byte(i as u8);
        let ids: Vec<u64> = (0..QUEUED).map(|i| queue.submit(contract(i), &request()).unwrap()).collect();
        assert!(matches!(queue.submit(contract(QUEUED), &request()), Err(SubmitError::Full)));
        assert!(!queue.waiting_jobs().contains_key(&contract(QUEUED)), "a refused request leaves no entry");
        assert_eq!(queue.job(ids[0]).unwrap().unwrap().state, JobState::Queued);
        let mut running = queue.job(ids[1]).unwrap().unwrap();
        running.state = JobState::Running;
        queue.put(ids[1], &running).unwrap();
        drop(queue);

        // Restarted: the 16 pending jobs are queued again (the queue is full again), ids continue.
        let again = Verifications::new(store.clone(), no_node(), Compilers::default(), Duration::from_secs(1)).unwrap();
        assert!(matches!(again.submit(contract(QUEUED), &request()), Err(SubmitError::Full)));
        assert_eq!(again.submit(contract(3), &request()).unwrap(), ids[3], "a restored job is still that job");
        let (cancel, runner) = (CancellationToken::new(), again.clone());
        let task = tokio::spawn(runner.run(cancel.clone()));
        // Without contract code every job fails with the reason once it runs.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        for id in &ids {
            let job = loop {
                let job = again.job(*id).unwrap().unwrap();
                if matches!(job.state, JobState::Failed(_)) {
                    break job;
                }
                assert!(std::time::Instant::now() < deadline, "job {id} was not run again: {job:?}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            let JobState::Failed(reason) = job.state else { unreachable!() };
            assert!(reason.contains("no indexed contract code"), "{reason}");
        }
        let next = again.submit(contract(0), &request()).unwrap();
        assert_eq!(next, ids[QUEUED - 1] + 1, "a finished job's request is a new job");
        cancel.cancel();
        task.await.unwrap();
    }

    /// Requests for one contract cannot fill the queue: the same request while its job waits is that job, and a
    /// contract has at most PER_CONTRACT jobs at once.
    #[tokio::test]
    async fn one_contract_s_requests_share_its_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &StoreOptions::default()).unwrap());
        let queue = Verifications::new(store, no_node(), Compilers::default(), Duration::from_secs(1)).unwrap();
        let first = queue.submit(Address::ZERO, &request()).unwrap();
        for _ in 0..QUEUED {
            assert_eq!(queue.submit(Address::ZERO, &request()).unwrap(), first);
        }
        let named = |name: &str| Request { contract_name: name.into(), ..request() };
        let second = queue.submit(Address::ZERO, &named("D")).unwrap();
        assert_ne!(second, first);
        assert!(matches!(queue.submit(Address::ZERO, &named("E")), Err(SubmitError::ContractBusy)));
        let other = queue.submit(Address::with_last_byte(1), &named("E")).unwrap();
        assert!(other > second, "another contract's request is queued");
        let job = queue.job(first).unwrap().unwrap();
        queue.finish(first, job, JobState::Failed("done".into())).unwrap();
        assert!(queue.submit(Address::ZERO, &named("E")).is_ok(), "a finished job frees its contract's slot");
    }

    #[tokio::test]
    async fn a_crashing_or_hanging_compiler_fails_the_job_with_a_message_that_names_no_path() {
        let dir = tempfile::tempdir().unwrap();
        let crash = dir.path().join("crash");
        // As a crashing solcjs does, the error output names the server's paths: they go to the log, not the reason.
        std::fs::write(&crash, "#!/bin/sh\necho 'at ccall (/srv/secret/soljson.js:736:18)' >&2\nexit 3\n").unwrap();
        let hang = dir.path().join("hang");
        std::fs::write(&hang, "#!/bin/sh\nexec sleep 30\n").unwrap();
        for file in [&crash, &hang] {
            std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        let err = verifier::compile(&crash, "0.8.37", b"{}", Duration::from_secs(10)).await.unwrap_err();
        assert!(err.to_string().contains("exit status: 3") && !err.to_string().contains("/srv/secret"), "{err}");
        let started = std::time::Instant::now();
        let err = verifier::compile(&hang, "0.8.37", b"{}", Duration::from_millis(300)).await.unwrap_err();
        assert!(err.to_string().contains("ran past its limit"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "the compiler was not killed");
    }
}
