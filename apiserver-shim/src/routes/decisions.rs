//! Spec §4.1 decisions: capability and entitlement queries (self-hosted Berth allows and
//! entitles everything). The checks of decision and usage records are `domain::decision_records`.

use super::Endpoint;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::json::Json;

pub use berth_api::decisions::{
    ActorInput, CapabilityAnswer, CapabilityDecision, CapabilityKeyQuery, CapabilityQuery,
    ContextInput, Entitlement, EntitlementAnswer, EntitlementQuery, MAX_KEY, MAX_QUERIES,
    OperationKeyQuery,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CapabilityQuery, CapabilityAnswer, _, _>(
            "/capabilities/query",
            "Whether operations are allowed (self-hosted: always)",
            capabilities,
        ),
        Endpoint::post::<EntitlementQuery, EntitlementAnswer, _, _>(
            "/entitlements/query",
            "Whether capabilities are entitled (self-hosted: always)",
            entitlements,
        ),
    ]
}

/// What a self-hosted installation reports as the source of its answers.
pub const SOURCE: &str = "self-hosted";
const SELF_HOSTED_REASON: &str = "self-hosted Berth has no plan limits";
/// What a person may do about a decision: nothing, here.
const SELF_HOSTED_HINT: &str = "no plan or quota applies: every operation a role allows is allowed";

async fn capabilities(
    _caller: Caller,
    JsonBody(body): JsonBody<CapabilityQuery>,
) -> ApiResult<Json<CapabilityAnswer>> {
    body.validate()?;
    let mut capabilities = Vec::with_capacity(body.queries.len());
    for query in body.queries {
        capabilities.push(CapabilityDecision {
            operation_key: query.operation_key,
            allowed: true,
            mode: "unrestricted".into(),
            hint: SELF_HOSTED_HINT.into(),
            reason: SELF_HOSTED_REASON.into(),
        });
    }
    Ok(Json(CapabilityAnswer { capabilities }))
}

async fn entitlements(
    _caller: Caller,
    JsonBody(body): JsonBody<EntitlementQuery>,
) -> ApiResult<Json<EntitlementAnswer>> {
    body.validate()?;
    let mut entitlements = Vec::with_capacity(body.queries.len());
    for query in body.queries {
        entitlements.push(Entitlement {
            capability_key: query.capability_key,
            entitled: true,
            status: "entitled".into(),
            mode: "unrestricted".into(),
            hint: SELF_HOSTED_HINT.into(),
            reason: SELF_HOSTED_REASON.into(),
            source: SOURCE.into(),
        });
    }
    Ok(Json(EntitlementAnswer { entitlements }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_counts_are_bounded() {
        use berth_api::decisions::count_queries;
        assert!(count_queries(0).is_err());
        assert!(count_queries(1).is_ok());
        assert!(count_queries(MAX_QUERIES + 1).is_err());
    }
}
